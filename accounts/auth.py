"""Who a JSON API request acts as, decided once by the ``api`` decorator before the view runs:

    Authorization: Bearer jpg_…   the token's owner. No CSRF check: a browser never adds this
                                  header by itself, so another site cannot make a visitor send it.
    session cookie, signed in     the session's user. POST/PUT/PATCH/DELETE must carry the CSRF
                                  token (X-CSRFToken), or another site could act as them.
    neither                       anonymous. No CSRF check: there is no one to impersonate, and
                                  scripts without cookies (POST /api/runs) keep working.

A token is ``jpg_`` and 43 URL-safe characters (32 random bytes); only its SHA-256 is stored. The
secret has 256 bits, so an unsalted fast hash is enough: there is nothing to guess in it, and a
lookup by hash needs no constant-time comparison (an attacker who times it learns about hashes,
not secrets)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db.models import Q
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.errors import ActionError

from .models import ApiToken

TOKEN_PREFIX = "jpg_"
# Shown in lists: "jpg_" and 8 characters of the secret, enough to tell a script's token apart.
PREFIX_SHOWN = len(TOKEN_PREFIX) + 8
# A script that polls GET /api/runs/<id> would otherwise write the token's row on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)
CSRF_REFUSED = gettext_lazy("CSRF token missing or wrong: send the csrftoken cookie's value in the X-CSRFToken header")


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).hexdigest()


def bearer_secret(authorization: str | None) -> str | None:
    """The token in an ``Authorization: Bearer <token>`` header (its value: a request's or a
    websocket's); None without one. Another scheme (Basic, from a proxy's password in front of the
    site, say) is not ours and is ignored."""
    scheme, _space, secret = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return secret.strip()


def token_for_secret(secret: str) -> ApiToken | None:
    """The live token with this secret (not revoked, not expired), whose owner may still sign in;
    None otherwise."""
    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=hash_secret(secret)).first()
    now = timezone.now()
    if token is None or not token.user.is_active or token.is_expired(now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION),
                                pk=token.pk).update(last_used_at=now)
    return token


def socket_bearer(scope) -> str | None:
    """The token in a websocket's ``Authorization: Bearer`` header; None without one."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and (secret := bearer_secret(value.decode("latin1"))) is not None:
            return secret
    return None


# A websocket close's reason has room for 123 bytes: the API's sentence, short.
SOCKET_TOKEN_REFUSED = gettext_lazy("the API token is not valid (revoked, expired or mistyped): make a new one at "
                                    "/accounts/")


class SocketTokenMiddleware:
    """A websocket opened with ``Authorization: Bearer <token>`` acts as the token's owner
    (``scope["user"]``, and the token in ``scope["auth_token"]``), as an API request does: a
    script that submitted with its token reads its submission's run on the socket the answer
    names. A token that is not valid closes the socket with 4401 and says why, on every route, as
    the API answers 401 (settings.WEBSOCKET_MIDDLEWARE)."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        secret = socket_bearer(scope)
        if secret is None:
            return await self.inner(scope, receive, send)
        from web.db import socket_db
        from web.languages import activate_scope_language

        token = await socket_db(token_for_secret)(secret)
        if token is not None:
            # ``token_alive``: whether the token still stands (not revoked, not expired), for a
            # socket that acts on it for long (a session's cells) to ask before each act.
            alive = socket_db(token_still_valid)
            return await self.inner(dict(scope, user=token.user, auth_token=token,
                                         token_alive=lambda: alive(token.pk)), receive, send)
        if (await receive())["type"] == "websocket.connect":
            activate_scope_language(scope)
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 4401, "reason": str(SOCKET_TOKEN_REFUSED)})
        return None


def token_still_valid(token_id) -> bool:
    """Whether a token a socket was opened with still stands: not revoked (its row gone), not
    expired, its owner still active."""
    token = ApiToken.objects.select_related("user").filter(pk=token_id).first()
    return token is not None and token.user.is_active and not token.is_expired()


def authenticate_api_request(request) -> None:
    """Set ``request.user`` and ``request.auth_token`` (None unless a token authenticated the
    request), or raise a 401 for a bad token and a 403 for a session request without its CSRF
    token."""
    request.auth_token = None
    secret = bearer_secret(request.META.get("HTTP_AUTHORIZATION"))
    if secret is not None:
        token = token_for_secret(secret)
        if token is None:
            raise ActionError(_("the API token is not valid: it was revoked, expired, mistyped or its account is "
                                "disabled (a password change revokes every token); "
                                "make a new one on your account page (/accounts/)"), status=401,
                              headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        request.user, request.auth_token = token.user, token

        async def auser():  # what AuthenticationMiddleware's async accessor would answer
            return token.user

        request.auser = auser
        return
    if request.user.is_authenticated and not csrf_passes(request):
        raise ActionError(CSRF_REFUSED, status=403)


def csrf_passes(request) -> bool:
    """Django's own check (token, Origin and Referer), run here because the API's views are exempt
    from the middleware's: only requests signed in by the session cookie need it. Safe methods pass."""
    check = CsrfViewMiddleware(lambda request: None)
    check.process_request(request)
    # None means accepted; a refusal is the 403 page, whose reason Django has already logged.
    return check.process_view(request, None, (), {}) is None
