"""State changes of accounts: sign-ups, API tokens, and deleting one's own runs. ``check_*``
validates and raises ``ActionError``; ``do_*`` changes state without validating."""

from __future__ import annotations

import re

from django.conf import settings

from playground.actions.errors import ActionError
from playground.ratelimit import check_rate

from .auth import PREFIX_SHOWN, hash_secret, new_secret
from .models import ApiToken, Draft

TOKEN_NAME_MAX = 100
# Enough for one per script and machine; a runaway loop that makes tokens stops here.
TOKENS_MAX = 100


# Sign-ups and password resets -------------------------------------------------------------------

def check_sign_up(form, *, client: str):
    """Save a valid ``UserCreationForm`` as a new account, at most SIGNUP_RATE_LIMIT_PER_HOUR an
    hour from one address (accounts made in bulk are for spam)."""
    check_rate("signups", client, settings.SIGNUP_RATE_LIMIT_PER_HOUR, 3600, "sign-ups")
    return do_sign_up(form)


def do_sign_up(form):
    return form.save()


def check_password_reset(*, client: str) -> None:
    """Each reset sends an email to an address anyone may type: one address may not use the site to
    flood a mailbox. The sign-up limit serves (both are rare for a person, frequent for a bot)."""
    check_rate("password-resets", client, settings.SIGNUP_RATE_LIMIT_PER_HOUR, 3600, "password reset emails")


# API tokens -------------------------------------------------------------------------------------

def check_create_token(payload, *, user) -> tuple[ApiToken, str]:
    """A new token for ``user``: (token, secret). The secret exists only in this answer."""
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ActionError("the request body must be a JSON object (or empty)")
    name = payload.get("name", "")
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise ActionError("'name' must be a string")
    name = name.strip()
    if len(name) > TOKEN_NAME_MAX:
        raise ActionError(f"'name' is {len(name)} characters; the limit is {TOKEN_NAME_MAX}")
    if ApiToken.objects.filter(user=user).count() >= TOKENS_MAX:
        raise ActionError(f"you have {TOKENS_MAX} tokens, the most one account may hold; revoke one first",
                          status=409)
    return do_create_token(user, name)


def do_create_token(user, name: str) -> tuple[ApiToken, str]:
    secret = new_secret()
    token = ApiToken.objects.create(user=user, name=name, prefix=secret[:PREFIX_SHOWN], key_hash=hash_secret(secret))
    return token, secret


def do_revoke_token(token: ApiToken) -> None:
    """Revoked is gone: the next request with its secret answers 401."""
    ApiToken.objects.filter(pk=token.pk).delete()


# Drafts -----------------------------------------------------------------------------------------

# "own" (the person's own code), or the example, snippet or course assignment a draft was edited from.
DRAFT_KEY = re.compile(r"own|example:[a-z0-9][a-z0-9-]{0,63}|snippet:[A-Za-z0-9]{1,32}|assignment:[1-9][0-9]{0,17}")
DRAFT_TITLE_MAX = 200
# Far more than a person edits by hand; the oldest go first beyond it.
DRAFTS_MAX = 100


def check_save_draft(key: str, payload, *, user) -> Draft:
    if not DRAFT_KEY.fullmatch(key):
        raise ActionError("a draft's key is 'own', 'example:<slug>', 'snippet:<slug>' or 'assignment:<id>'", status=404)
    if not isinstance(payload, dict):
        raise ActionError("the request body must be a JSON object {code, title?}")
    code, title = payload.get("code"), payload.get("title", "")
    if not isinstance(code, str):
        raise ActionError("'code' must be a string")
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > settings.RUN_MAX_CODE_BYTES:
        raise ActionError(f"the code is {size} bytes; a draft may hold at most {settings.RUN_MAX_CODE_BYTES} bytes "
                          f"(as much as a run)", status=413)
    if title is None:
        title = ""
    if not isinstance(title, str) or len(title) > DRAFT_TITLE_MAX:
        raise ActionError(f"'title' must be a string of at most {DRAFT_TITLE_MAX} characters")
    return do_save_draft(user, key, code, title)


def do_save_draft(user, key: str, code: str, title: str) -> Draft:
    draft, _ = Draft.objects.update_or_create(user=user, key=key, defaults={"code": code, "title": title})
    stale = Draft.objects.filter(user=user).order_by("-updated_at").values_list("pk", flat=True)[DRAFTS_MAX:]
    Draft.objects.filter(pk__in=list(stale)).delete()
    return draft


def do_delete_draft(draft: Draft) -> None:
    Draft.objects.filter(pk=draft.pk).delete()
