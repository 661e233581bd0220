"""Who a request or a websocket comes from, as far as limits are concerned.

    address      the address the client connected from (``client_address``; behind proxies of
                 our own, the one the outermost saw)
    client key   whom every limit counts against (``client_key``): a signed-in account
                 ("user:<id>"), else the address, an IPv6 address per /64 ("ip:2001:db8::/64"):
                 one host holds a whole /64, and rotating through it must not buy more of
                 anything. Runs, course runs, submissions, snippets, sign-ups, password resets,
                 sign-ins, the formatter, drafts, dashboards and /readyz all count this way.
"""

from __future__ import annotations

import ipaddress

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
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return address_key(address or "unknown")


def is_account_key(key: str) -> bool:
    """Whether a client key is an account's (else it is an address, shared by everyone signed out
    behind it)."""
    return key.startswith("user:")


def request_client_key(request) -> str:
    """``client_key`` of an HTTP request, as the API decorator authenticated it."""
    address = client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
    return client_key(address, getattr(request, "user", None))


def scope_client_key(scope, user=None) -> str:
    """``client_key`` of a websocket connection, for ``user`` (the one it authenticated as)."""
    return client_key(scope_client_address(scope), user)
