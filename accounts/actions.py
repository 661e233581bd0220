"""State changes of accounts: sign-ups, sign-ins, API tokens, drafts. ``check_*`` validates and
raises ``ActionError``; ``do_*`` changes state without validating."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.api import text
from web.errors import ActionError
from web.redis import exclusive
from web.ratelimit import check_rate, forget, give_back, reserve

from .auth import PREFIX_SHOWN, hash_secret, new_secret
from .models import ApiToken, Draft

TOKEN_NAME_MAX = 100
# Enough for one per script and machine; a runaway loop that makes tokens stops here.
TOKENS_MAX = 100
# A token may be made to expire after this many days at most (or never, by default).
TOKEN_EXPIRY_DAYS_MAX = 3650
# Failed sign-ins are counted in windows of this long, per account and per client.
SIGN_IN_WINDOW_S = 15 * 60

log = logging.getLogger("accounts")

# What the limits count, as their refusals name it (``web.ratelimit``).
SIGN_UPS = gettext_lazy("sign-ups from your address")
SIGN_UPS_BY_JOIN_LINK = gettext_lazy("sign-ups through join links from your address")
PASSWORD_RESETS = gettext_lazy("password reset emails")
FAILED_SIGN_INS_TO_ACCOUNT = gettext_lazy("failed sign-ins to this account")
FAILED_SIGN_INS_FROM_CLIENT = gettext_lazy("failed sign-ins from your address")
DRAFT_SAVES = gettext_lazy("draft saves")


# Sign-ups and password resets -------------------------------------------------------------------

def check_sign_up(form, *, client: str, bucket: tuple[str, int, str] | None = None):
    """Save a valid ``UserCreationForm`` as a new account, at most SIGNUP_RATE_LIMIT_PER_HOUR an
    hour from one address (accounts made in bulk are for spam, and each would have fair shares of
    its own). ``bucket``: ``(key, limit, what)``, what a sign-up through a link that takes a group
    in counts against instead (a course's join link: ``courses.actions.members.sign_up_bucket``).
    A class signs up there together, often behind one address, so those sign-ups count apart: at
    most ``limit`` an hour through that link (``key``, from any addresses; ``what`` names them in
    the refusal), and as many from the address through any such link (anyone may make a course,
    and its link, so the address's bound is what stops a bot that does)."""
    if bucket is None:
        try:
            check_rate("signups", client, settings.SIGNUP_RATE_LIMIT_PER_HOUR, 3600, SIGN_UPS)
        except ActionError as exc:
            raise ActionError(_("%(refusal)s. Signing up with a class? Use your course's join link: a whole room "
                                "may sign up through it") % {"refusal": exc.message},
                              status=exc.status, headers=exc.headers, data=exc.data) from None
    else:
        key, limit, what = bucket
        check_rate("signups-by-join-link", client, limit, 3600, SIGN_UPS_BY_JOIN_LINK)
        check_rate("signups-through", key, limit, 3600, what)
    return do_sign_up(form)


def do_sign_up(form):
    return form.save()


def check_password_reset(*, client: str) -> None:
    """Each reset sends an email to an address anyone may type: one address may not use the site to
    flood a mailbox. The sign-up limit serves (both are rare for a person, frequent for a bot)."""
    check_rate("password-resets", client, settings.SIGNUP_RATE_LIMIT_PER_HOUR, 3600, PASSWORD_RESETS)


# Sign-ins ---------------------------------------------------------------------------------------

def _account(username: str) -> str:
    return username.strip().lower()[:150]


def check_sign_in(*, username: str, client: str) -> list[str]:
    """Reserve this sign-in among the account's SIGNIN_FAILURES_PER_ACCOUNT failures a window
    (password guessing) and the client's SIGNIN_FAILURES_PER_CLIENT (guessing across accounts, or
    burning the CPU), before its password is hashed (a third of a second of CPU each), or refuse
    (429). Every attempt counts as a failure from the start and gives its place back once it
    succeeded (``do_sign_in_succeeded``, with what this returns): attempts in flight together
    count as they arrive, so a burst of twenty at a limit of ten has ten passwords checked, not
    twenty. The counts live in Redis: while it is away, sign-ins are refused (503) rather than
    let through uncounted."""
    try:
        return reserve([("sign-in-failures-account", _account(username), settings.SIGNIN_FAILURES_PER_ACCOUNT,
                         FAILED_SIGN_INS_TO_ACCOUNT),
                        ("sign-in-failures", client, settings.SIGNIN_FAILURES_PER_CLIENT, FAILED_SIGN_INS_FROM_CLIENT)],
                       SIGN_IN_WINDOW_S)
    except redis.RedisError:
        raise ActionError(_("signing in is unavailable for a moment; try again in a few seconds"), status=503,
                          headers={"Retry-After": "5"}) from None


def do_sign_in_succeeded(reserved: list[str]) -> None:
    """The attempt reserved by ``check_sign_in`` had the right password: it was no failure."""
    try:
        for key in reserved:
            give_back(key)
    except redis.RedisError:  # signed in all the same; the count lapses with its window
        log.warning("could not give back a sign-in's reservation: Redis is unreachable")


def do_forget_failed_sign_ins(username: str) -> None:
    """The account's owner signed in: their typos so far no longer count against the account (the
    client's count stays: signing into one's own account must not buy guesses at others)."""
    try:
        forget("sign-in-failures-account", _account(username), SIGN_IN_WINDOW_S)
    except redis.RedisError:  # signed in all the same; the count lapses with its window
        log.warning("could not forget an account's failed sign-ins: Redis is unreachable")


# API tokens -------------------------------------------------------------------------------------

def check_create_token(payload, *, user) -> tuple[ApiToken, str]:
    """A new token for ``user``: (token, secret). The secret exists only in this answer."""
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object (or empty)"))
    name = text(payload, "name", TOKEN_NAME_MAX, strip=True, unit="characters", default="")
    days = payload.get("expires_in_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int)
                             or not 1 <= days <= TOKEN_EXPIRY_DAYS_MAX):
        raise ActionError(_("'%(name)s' must be a whole number of days from 1 to %(max)s, or null for a token that "
                            "lasts until it is revoked") % {"name": "expires_in_days", "max": TOKEN_EXPIRY_DAYS_MAX})
    # Counted and made under the account's lock: tokens asked for together must not each count
    # the same TOKENS_MAX - 1 and all be made.
    with exclusive(f"tokens:{user.pk}"):
        if ApiToken.objects.filter(user=user).count() >= TOKENS_MAX:
            raise ActionError(_("you have %(max)s tokens, the most one account may hold; revoke one first")
                              % {"max": TOKENS_MAX}, status=409)
        return do_create_token(user, name, expires_in_days=days)


def do_create_token(user, name: str, *, expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    secret = new_secret()
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken.objects.create(user=user, name=name, prefix=secret[:PREFIX_SHOWN], key_hash=hash_secret(secret),
                                    expires_at=expires_at)
    return token, secret


def do_revoke_token(token: ApiToken) -> None:
    """Revoked is gone: the next request with its secret answers 401, and the websockets it
    opened (a course's dashboard) are closed once the revocation is committed."""
    ApiToken.objects.filter(pk=token.pk).delete()
    _close_sockets_on_commit([token.group])


def do_revoke_all_tokens(user) -> int:
    """Every token of ``user`` (their password changed: whoever learnt the old one may have made
    tokens with it). Returns how many."""
    tokens = list(ApiToken.objects.filter(user=user))
    ApiToken.objects.filter(pk__in=[t.pk for t in tokens]).delete()
    _close_sockets_on_commit([t.group for t in tokens])
    return len(tokens)


def _close_sockets_on_commit(groups: list[str]) -> None:
    if groups:
        transaction.on_commit(lambda: close_token_sockets(groups))


def close_token_sockets(groups: list[str]) -> None:
    """Tell the websockets of these tokens' groups to close (``courses.consumers``). A channel
    layer that is away loses the message; the sockets then close at their next check."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    try:
        for group in groups:
            async_to_sync(layer.group_send)(group, {"type": "token.revoked"})
    except Exception:  # the revocation is done; only the sockets' prompt close is lost
        log.exception("could not tell the websockets of %d revoked tokens to close", len(groups))


# Drafts -----------------------------------------------------------------------------------------

# "own" (the person's own code), or the example, snippet or course assignment a draft was edited from.
DRAFT_KEY = re.compile(r"own|example:[a-z0-9][a-z0-9-]{0,63}|snippet:[A-Za-z0-9]{1,32}|assignment:[1-9][0-9]{0,17}")
DRAFT_TITLE_MAX = 200
# Far more than a person edits by hand; the oldest go first beyond it.
DRAFTS_MAX = 100


def check_draft_rate(user) -> None:
    """Draft writes (each change the editor sends, a few seconds apart at most) per account."""
    check_rate("drafts", f"user:{user.pk}", settings.DRAFT_RATE_LIMIT_PER_MINUTE, 60, DRAFT_SAVES)


def check_save_draft(key: str, payload, *, user) -> Draft:
    check_draft_rate(user)
    if not DRAFT_KEY.fullmatch(key):
        raise ActionError(_("a draft's key is 'own', 'example:<slug>', 'snippet:<slug>' or 'assignment:<id>'"),
                          status=404)
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object {code, title?}"))
    # A draft holds as much code as a run.
    code = text(payload, "code", settings.RUN_MAX_CODE_BYTES, required=True, status=413)
    title = text(payload, "title", DRAFT_TITLE_MAX, unit="characters", default="")
    return do_save_draft(user, key, code, title)


def do_save_draft(user, key: str, code: str, title: str) -> Draft:
    draft, _created = Draft.objects.update_or_create(user=user, key=key, defaults={"code": code, "title": title})
    stale = Draft.objects.filter(user=user).order_by("-updated_at").values_list("pk", flat=True)[DRAFTS_MAX:]
    Draft.objects.filter(pk__in=list(stale)).delete()
    return draft


def do_delete_draft(draft: Draft) -> None:
    Draft.objects.filter(pk=draft.pk).delete()
