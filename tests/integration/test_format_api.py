"""POST /api/format: ruff's formatter on the server, with the playground's notebook lines kept,
and clear errors for what it cannot format."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_limits():
    from playground.redis import get_redis

    for key in get_redis().scan_iter("ratelimit:format:*"):
        get_redis().delete(key)


def post(body, client=None):
    return (client or Client()).post("/api/format", body, content_type="application/json")


def test_it_formats_code_and_keeps_magics_and_shell_lines_as_written():
    code = "x=[1,2,\n3]\n%timeit f( x )\ndef g(a):\n  %time y=a\n  return a\n!pip list\n"
    response = post({"code": code})
    assert response.status_code == 200
    assert response.json()["code"] == (
        "x = [1, 2, 3]\n%timeit f( x )\n\n\ndef g(a):\n    %time y=a\n    return a\n\n\n!pip list\n")


def test_already_formatted_code_comes_back_unchanged():
    code = "import jax\n\nprint(jax.numpy.ones(3))\n"
    assert post({"code": code}).json() == {"code": code}


def test_code_that_is_not_python_is_a_422_naming_the_line():
    response = post({"code": "x = 1\ndef f(:\n    pass\n"})
    assert response.status_code == 422
    assert "not valid Python at line 2" in response.json()["error"]


@pytest.mark.parametrize("body, status, words", [
    ({"cod": "x"}, 400, "send {\"code\""),
    ({"code": 3}, 400, "send {\"code\""),
    ({"code": "x" * (64 * 1024 + 1)}, 413, "the limit is 65536 bytes"),
])
def test_malformed_requests_get_clear_errors(body, status, words):
    response = post(body)
    assert response.status_code == status
    assert words in response.json()["error"]


def test_it_is_rate_limited_per_client(settings):
    settings.FORMAT_RATE_LIMIT_PER_MINUTE = 2
    assert post({"code": "x=1"}).status_code == 200
    assert post({"code": "x=1"}).status_code == 200
    refused = post({"code": "x=1"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1


def test_the_formatter_is_in_the_openapi_schema():
    assert "post" in Client().get("/api/openapi.json").json()["paths"]["/api/format"]
