"""The page's static files as a browser gets them from daphne: content-hashed names cached for a
year, Brotli or gzip as the browser accepts; the same in development (DEBUG=1) as in production,
and the page says it is loading while the script arrives."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def get(url: str, encoding: str | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def test_the_script_and_styles_are_hashed_compressed_and_cached_for_a_year(live_stack):
    _, _, html = get(live_stack.url + "/")
    page = html.decode()
    assert 'id="editor-loading"' in page and "Loading the editor" in page
    script = re.search(r'<script type="module" src="(/static/app\.[0-9a-f]{12}\.js)">', page).group(1)
    style = re.search(r'<link rel="stylesheet" href="(/static/app\.[0-9a-f]{12}\.css)">', page).group(1)
    worker = re.search(r'data-worker-url="(/static/editor\.worker\.[0-9a-f]{12}\.js)"', page).group(1)
    for path in (script, style, worker):
        _, plain_headers, plain = get(live_stack.url + path)
        for encoding in ("br", "gzip"):
            status, headers, body = get(live_stack.url + path, encoding)
            assert status == 200
            assert headers.get("content-encoding") == encoding, (path, headers)
            assert len(body) < len(plain) / 2.5, f"{path} as {encoding}: {len(body)} of {len(plain)} bytes"
            assert "immutable" in headers["cache-control"]
            assert int(re.search(r"max-age=(\d+)", headers["cache-control"]).group(1)) >= 365 * 86400
            assert "accept-encoding" in headers.get("vary", "").lower()


@pytest.mark.parametrize("env, storage", [
    ({"DEBUG": "1"}, "whitenoise.storage.CompressedManifestStaticFilesStorage"),
    ({"DEBUG": "0", "SECRET_KEY": "x" * 50}, "whitenoise.storage.CompressedManifestStaticFilesStorage"),
    ({"DEBUG": "1", "STATIC_FROM_SOURCE": "1"}, "django.contrib.staticfiles.storage.StaticFilesStorage"),
])
def test_development_serves_the_same_compressed_files_unless_asked_for_the_sources(env, storage):
    code = ("import django; django.setup(); from django.conf import settings; "
            "print(settings.STORAGES['staticfiles']['BACKEND'], settings.WHITENOISE_USE_FINDERS)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "web.settings", **env})
    backend, finders = done.stdout.split()
    assert backend == storage
    assert finders == str(storage.endswith("StaticFilesStorage") and "whitenoise" not in storage)
