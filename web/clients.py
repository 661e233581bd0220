"""Who a request or a websocket comes from, as far as limits are concerned.

    address      the address the client connected from (``client_address``; behind proxies of
                 our own, the one the outermost saw)
    browser      a browser's own identity, signed out: a random id in a cookie this site signs
                 (``BrowserMiddleware`` sets it on the first page a browser loads; HttpOnly,
                 SameSite=Lax, Secure over HTTPS, a year). Only an id this site signed counts: a
                 cookie of anyone's own making, or one altered, is no identity. Anyone can have as
                 many as they fetch pages, so an identity alone bounds nothing: it is always
                 inside its room (below), the room of the address it comes from now
    client key   ``client_key``: a signed-in account ("user:<id>"), else the address, an IPv6
                 address per /64 ("ip:2001:db8::/64"): one host holds a whole /64, and rotating
                 through it must not buy more of anything
    person key   ``Client.person``: a signed-in account, else the browser ("anon:<id>"), else
                 the address (a script, curl, a browser that keeps no cookies: everyone at the
                 address without an identity shares it)
    room         ``Client.room``: everyone signed out at one address together, browsers and the
                 address's own share alike ("room:ip:…"), sized for ROOM_SIZE people (a
                 workshop's Wi-Fi, a school's NAT). None for an account, which counts nowhere
                 but against itself

Which key each limit counts, and why:

    a person's, within their room     runs (active slots, the run rate, priority steps, executor
                                      seconds: playground/quotas.py), comparisons' runs, run
                                      sockets, the formatter, the editor's analysis and problems.
                                      A room of people does these all at once, each as one
                                      person does; a share per address would have the thirtieth
                                      person refused for the other twenty-nine's runs. What each
                                      costs ends with it (a run, a socket, a request), and the
                                      room's cap bounds whoever mints identities to a room's
    the client key                    snippets and comparisons shared (each a row and a page for
                                      good: identities must not multiply them, and a room shares
                                      a few, not a few each), sign-ups and password resets (an
                                      account or a mail each), failed sign-ins (an identity per
                                      guess would undo the throttle), join codes that name no
                                      course (codes must not be tried in bulk), /readyz (no
                                      person is behind a health check)
    the account alone                 course runs, submissions, regrades, drafts, dashboards:
                                      only the signed in have them

Who started a run (a snippet's first run is kept, and may be cancelled, only by whoever started
it) is the person key too: a browser that shares a snippet and then runs it is one person.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.http.cookie import parse_cookie

# The browser's identity: the cookie, its signature's salt, and how long it lasts (Chrome keeps a
# cookie 400 days at most).
BROWSER_COOKIE = "browser"
BROWSER_SALT = "web.clients.browser"
BROWSER_MAX_AGE_S = 365 * 24 * 3600


def client_address(remote: str | None, forwarded: str | None) -> str:
    """The address a client's rate limit and socket cap count against. Behind N reverse proxies
    of our own (``TRUSTED_PROXIES=N``) it is the N-th address from the right of X-Forwarded-For,
    the one the outermost of them saw; whatever a client wrote there itself stands further left
    and is ignored."""
    hops = settings.TRUSTED_PROXIES
    if hops and forwarded:
        addresses = [a.strip() for a in forwarded.split(",") if a.strip()]
        if len(addresses) >= hops:
            return addresses[-hops]
    return remote or "unknown"


def scope_client_address(scope) -> str:
    """``client_address`` of an ASGI (websocket) connection."""
    forwarded = None
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            forwarded = value.decode("latin1")
    client = scope.get("client") or (None,)
    return client_address(client[0], forwarded)


def address_key(address: str) -> str:
    """An address as limits count it: IPv4 as is, IPv6 per /64 (an IPv4-mapped one as its IPv4)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"ip:{address}"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return f"ip:{ip.ipv4_mapped}"
        return f"ip:{ipaddress.ip_network(f'{ip}/64', strict=False)}"
    return f"ip:{ip}"


def client_key(address: str | None, user=None) -> str:
    """Whom a limit counts against: the account when signed in (only the account: a person is one
    client, from whichever address), else the address (``address_key``)."""
    if _signed_in(user):
        return f"user:{user.pk}"
    return address_key(address or "unknown")


def is_account_key(key: str) -> bool:
    """Whether a client or person key is an account's."""
    return key.startswith("user:")


def is_address_key(key: str) -> bool:
    """Whether a person key is an address's (shared by everyone there without an identity)."""
    return key.startswith("ip:")


@dataclass(frozen=True)
class Client:
    """Whom a request or socket counts against: ``key`` (the client key), ``person`` (the person
    key) and ``room`` (None when signed in); see the module's docstring."""

    key: str
    person: str
    room: str | None


def make_client(address: str | None, user=None, browser: str | None = None) -> Client:
    """The client of ``address`` signed in as ``user``, else with the verified identity
    ``browser`` (``request_browser``, ``scope_browser``), else with neither."""
    key = client_key(address, user)
    if is_account_key(key):
        return Client(key=key, person=key, room=None)
    return Client(key=key, person=f"anon:{browser}" if browser else key, room=f"room:{key}")


def _signed_in(user) -> bool:
    return user is not None and getattr(user, "is_authenticated", False)


def request_client_key(request) -> str:
    """``client_key`` of an HTTP request, as the API decorator authenticated it."""
    address = client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
    return client_key(address, getattr(request, "user", None))


def request_client(request) -> Client:
    """``Client`` of an HTTP request, as the API decorator authenticated it."""
    address = client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
    user = getattr(request, "user", None)
    return make_client(address, user, None if _signed_in(user) else request_browser(request))


def scope_client_key(scope, user=None) -> str:
    """``client_key`` of a websocket connection, for ``user`` (the one it authenticated as)."""
    return client_key(scope_client_address(scope), user)


def scope_client(scope, user=None) -> Client:
    """``Client`` of a websocket connection, for ``user`` (the one it authenticated as)."""
    return make_client(scope_client_address(scope), user, None if _signed_in(user) else scope_browser(scope))


# The browser's identity --------------------------------------------------------------------------

def _signer() -> signing.TimestampSigner:
    # SECRET_KEY signs, SECRET_KEY_FALLBACKS still verify: rotating the key keeps the identities.
    return signing.TimestampSigner(salt=BROWSER_SALT)


def browser_id(value: str | None) -> str | None:
    """The identity a cookie's value carries if this site signed it within BROWSER_MAX_AGE_S,
    else None."""
    if not value:
        return None
    try:
        found = _signer().unsign(value, max_age=BROWSER_MAX_AGE_S)
    except signing.BadSignature:
        return None
    # Ours are token_urlsafe(16): 22 characters of [A-Za-z0-9_-]. Anything else was never issued.
    return found if len(found) == 22 and found.replace("-", "").replace("_", "").isalnum() else None


def request_browser(request) -> str | None:
    return browser_id(request.COOKIES.get(BROWSER_COOKIE))


def scope_browser(scope) -> str | None:
    cookies = scope.get("cookies")  # Channels' CookieMiddleware parses them; else the header
    if cookies is None:
        header = next((v.decode("latin1") for k, v in scope.get("headers", ()) if k == b"cookie"), "")
        cookies = parse_cookie(header)
    return browser_id(cookies.get(BROWSER_COOKIE))


class BrowserMiddleware:
    """Gives a browser its identity with the first page it loads (a page: a GET answered with
    HTML), so that the page's runs and sockets are its own person's. A JSON answer sets none: a
    script keeps the address's share unless it fetches pages for cookies, which buys no more than
    the room's."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (request.method == "GET" and response.status_code == 200
                and response.get("Content-Type", "").startswith("text/html")
                and request_browser(request) is None):
            response.set_cookie(BROWSER_COOKIE, _signer().sign(secrets.token_urlsafe(16)), max_age=BROWSER_MAX_AGE_S,
                                httponly=True, samesite="Lax", secure=settings.HTTPS)
        return response
