"""Who a request or a websocket comes from, as far as limits are concerned."""

from __future__ import annotations

from django.conf import settings


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
