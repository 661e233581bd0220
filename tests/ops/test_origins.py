"""Which pages may open the site's websockets: a page of this very site, compared as scheme, host
and port (another port or scheme on the same host is another site), or one of
CSRF_TRUSTED_ORIGINS; a script without an Origin as ever."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from web.origins import origin_allowed

SITE = [(b"host", b"127.0.0.1:8000")]


def scope(headers=SITE, scheme="ws") -> dict:
    return {"type": "websocket", "scheme": scheme, "headers": list(headers)}


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://127.0.0.1:8000", True),
    ("HTTP://127.0.0.1:8000", True),
    ("http://127.0.0.1:9999", False),   # another port: another site
    ("https://127.0.0.1:8000", False),  # another scheme
    ("http://127.0.0.1:8000.evil.example", False),
    ("http://evil.example", False),
    ("null", False),
    ("", False),
])
def test_an_origin_is_its_scheme_host_and_port(settings, origin, allowed):
    settings.CSRF_TRUSTED_ORIGINS = []
    assert origin_allowed(scope(), origin) is allowed


def test_a_host_that_is_not_allowed_is_no_origin_of_ours(settings):
    """A page of evil.example that resolves the name to this machine (DNS rebinding) sends its
    own Host and Origin: they agree, but the host is not ours."""
    settings.CSRF_TRUSTED_ORIGINS = []
    assert not origin_allowed(scope([(b"host", b"evil.example")]), "http://evil.example")


def test_the_default_port_counts_as_given(settings):
    settings.CSRF_TRUSTED_ORIGINS = []
    assert origin_allowed(scope([(b"host", b"localhost")]), "http://localhost:80")
    assert not origin_allowed(scope([(b"host", b"localhost")]), "http://localhost:8080")


def test_over_tls_the_page_is_https(settings):
    settings.CSRF_TRUSTED_ORIGINS = []
    assert origin_allowed(scope(scheme="wss"), "https://127.0.0.1:8000")
    assert not origin_allowed(scope(scheme="wss"), "http://127.0.0.1:8000")


def test_a_trusted_proxy_says_it_took_tls(settings):
    settings.CSRF_TRUSTED_ORIGINS = []
    settings.ALLOWED_HOSTS = ["play.example.org"]
    behind = [(b"host", b"play.example.org"), (b"x-forwarded-proto", b"https")]
    settings.TRUSTED_PROXIES = 1
    assert origin_allowed(scope(behind), "https://play.example.org")
    settings.TRUSTED_PROXIES = 0  # then anyone could send the header
    assert not origin_allowed(scope(behind), "https://play.example.org")


def test_csrf_trusted_origins_are_compared_whole_too(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.org", "https://*.example.com"]
    assert origin_allowed(scope([]), "https://app.example.org")
    assert origin_allowed(scope([]), "https://docs.example.com")
    assert not origin_allowed(scope([]), "http://app.example.org")
    assert not origin_allowed(scope([]), "https://app.example.org:8443")
    assert not origin_allowed(scope([]), "https://example.com.evil.example")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("headers", "opens"), [
    ([], True),  # a script
    ([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")], True),
    ([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:9999")], False),
    ([(b"host", b"127.0.0.1:8000"), (b"origin", b"https://127.0.0.1:8000")], False),
])
async def test_the_application_opens_or_refuses_accordingly(headers, opens):
    from web.asgi import application

    comm = WebsocketCommunicator(application, "/ws/runs/00000000-0000-0000-0000-000000000000/", headers=headers)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected is opens
    await comm.disconnect()
