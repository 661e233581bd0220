"""Which websocket connections may open: a browser page of this site, or a script.

Browsers always send ``Origin``, so a page on another site is refused by checking it when it is
there; scripts (Python's websockets, wscat, curl) send none, and are let in like any API client.
An Origin is compared whole, as scheme, host and port (as Django's CSRF check compares a POST's):
it must be the connection's own origin (the scheme it came in by, ``https`` when a trusted proxy
says it took TLS, and its ``Host``, which must be one of ALLOWED_HOSTS), or one of
CSRF_TRUSTED_ORIGINS. A page of another port or scheme on the same host is another site:
``http://127.0.0.1:9999`` may not open the sockets of ``http://127.0.0.1:8000``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def parse_origin(value: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or a ``Host``-like URL; None when it is not one."""
    try:
        parts = urlsplit(value.strip())
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if scheme not in DEFAULT_PORTS or not host:
        return None
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    return scheme, host, port or DEFAULT_PORTS[scheme]


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin1")
    return None


def own_origin(scope) -> tuple[str, str, int] | None:
    """The origin a page of this site that opens this socket has: its scheme and ``Host``."""
    host = _header(scope, b"host")
    if not host:
        return None
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, allowed_hosts()):
        return None
    secure = scope.get("scheme") in ("wss", "https")
    forwarded = _header(scope, b"x-forwarded-proto")
    if settings.TRUSTED_PROXIES and forwarded:
        secure = forwarded.split(",")[-1].strip().lower() == "https"
    return parse_origin(f"{'https' if secure else 'http'}://{host}")


def allowed_hosts() -> list[str]:
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    return allowed


def origin_allowed(scope, origin: str) -> bool:
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    if parsed == own_origin(scope):
        return True
    return any(_trusted(parsed, trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS)


def _trusted(origin: tuple[str, str, int], trusted: str) -> bool:
    """``https://*.example.com`` trusts every subdomain, as it does for Django's CSRF check."""
    wildcard = "://*." in trusted
    pattern = parse_origin(trusted.replace("://*.", "://", 1) if wildcard else trusted)
    if pattern is None:
        return False
    scheme, host, port = origin
    if (scheme, port) != (pattern[0], pattern[2]):
        return False
    return host.endswith("." + pattern[1]) if wildcard else host == pattern[1]


class SiteOrScriptOriginValidator:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        origin = _header(scope, b"origin")
        if origin is None or origin_allowed(scope, origin):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


def site_or_script(application):
    """A page of this very site (scheme, host and port), or a connection without Origin."""
    return SiteOrScriptOriginValidator(application)
