"""Which address a run's rate limit counts against, directly connected or behind proxies."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from web.api import client_address


def request(remote: str, forwarded: str | None = None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().post("/api/runs", **extra)


def test_without_proxies_a_forged_header_is_ignored(settings):
    settings.TRUSTED_PROXIES = 0
    assert client_address(request("203.0.113.7", "198.51.100.1")) == "203.0.113.7"


@pytest.mark.parametrize(("hops", "forwarded", "expected"), [
    (1, "198.51.100.1", "198.51.100.1"),
    # The client wrote its own header; our proxy appended the address it really saw.
    (1, "10.9.9.9, 198.51.100.1", "198.51.100.1"),
    # Two proxies of ours: the outer one's view is second from the right.
    (2, "10.9.9.9, 198.51.100.1, 172.16.0.2", "198.51.100.1"),
    (2, " 198.51.100.1 ,172.16.0.2 ", "198.51.100.1"),
])
def test_behind_proxies_the_outermost_ones_view_counts(settings, hops, forwarded, expected):
    settings.TRUSTED_PROXIES = hops
    assert client_address(request("172.16.0.3", forwarded)) == expected


def test_a_missing_or_short_header_falls_back_to_the_peer(settings):
    settings.TRUSTED_PROXIES = 2
    assert client_address(request("172.16.0.3")) == "172.16.0.3"
    assert client_address(request("172.16.0.3", "198.51.100.1")) == "172.16.0.3"
