"""Shared snippets through the real URLs: the API and its errors, content-derived slugs, forks,
the page a link opens (which runs nothing), downloads, escaping and the page's security headers.
Saved runs are made in the database here; tests/snippets/test_live_snippets.py shares real runs."""

from __future__ import annotations

import base64
import json
import re

import nbformat
import pytest
from django.test import Client

from executor import events as ev
from playground.models import Run, RunEvent
from snippets.models import Snippet
from snippets.slugs import ALPHABET, LENGTH

pytestmark = pytest.mark.django_db

# The smallest valid PNG: one transparent pixel.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000050001a5f645400000000049454e44ae426082")).decode()


def share(client: Client, status: int | tuple = (200, 201), **body) -> dict:
    response = client.post("/api/snippets", body, content_type="application/json")
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, response.content
    return response.json()


def saved_run(code: str, events: list[dict], device: str = "cpu") -> Run:
    """A finished run with these events (seq from 2; "queued" is 1), as the recorder stores one."""
    run = Run.objects.create(code=code, device=device, status=ev.SUCCEEDED)
    all_events = [{"type": "queued"}, {"type": "started", "jax_version": "0.12.0.1",
                                      "libraries": {"jaxlib": "0.12.0.1"}}, *events,
                  {"type": "finished", "status": "succeeded", "wall_ms": 12.0}]
    for seq, event in enumerate(all_events, 1):
        RunEvent.objects.create(run=run, seq=seq, type=event["type"], data={"seq": seq, **event})
    return run


@pytest.fixture(autouse=True)
def _clean_rate_limits(redis_client):
    for key in redis_client.scan_iter("ratelimit:*"):
        redis_client.delete(key)


class TestSharing:
    def test_it_saves_a_snippet_and_the_same_content_gives_the_same_link(self, client):
        first = share(client, 201, code="print(1)\n", title="One")
        assert re.fullmatch(f"[{ALPHABET}]{{{LENGTH}}}", first["slug"])
        assert first["url"] == f"http://testserver/s/{first['slug']}" and first["created"] is True
        again = share(client, 200, code="print(1)\n", title="One")
        assert again["slug"] == first["slug"] and again["created"] is False
        other = share(client, 201, code="print(1)\n", title="Two")
        assert other["slug"] != first["slug"]
        assert Snippet.objects.count() == 2

    def test_slugs_have_no_vowels_so_no_words(self):
        assert not set("aeiouyl01o") & set(ALPHABET)

    @pytest.mark.parametrize("body, message", [
        ([1], "JSON object"),
        ({}, "'code' is required"),
        ({"code": 1}, "'code' must be a string"),
        ({"code": "x" * (64 * 1024 + 1)}, "the limit is 65536 bytes"),
        ({"code": "x", "title": "t" * 201}, "'title' is 201 characters"),
        ({"code": "x", "title": 5}, "'title' must be a string"),
        ({"code": "x", "description": "d" * 10_001}, "'description' is 10001 characters"),
        ({"code": "x", "device": "abacus"}, "unknown device 'abacus'"),
        ({"code": "x", "device": "gpu:H200"}, "or a specific device kind of one, such as gpu:h200"),
        ({"code": "x", "device": "gpu:" + "a" * 33}, "unknown device"),
        ({"code": "x", "run": "00000000-0000-0000-0000-000000000000"}, "'run' names no run"),
        ({"code": "x", "parent": "bcdfghjkmnpq"}, "'parent' names no snippet"),
    ])
    def test_bad_input_is_a_clear_error_and_saves_nothing(self, client, body, message):
        response = client.post("/api/snippets", body, content_type="application/json")
        assert response.status_code == 400
        assert message in response.json()["error"]
        assert Snippet.objects.count() == 0

    def test_malformed_json_is_refused(self, client):
        response = client.post("/api/snippets", b"{nope", content_type="application/json")
        assert response.status_code == 400 and "not valid JSON" in response.json()["error"]

    def test_sharing_is_rate_limited_per_client(self, client, settings):
        settings.SNIPPET_RATE_LIMIT_PER_HOUR = 2
        share(client, 201, code="a")
        share(client, 201, code="b")
        response = client.post("/api/snippets", {"code": "c"}, content_type="application/json")
        assert response.status_code == 429
        assert "at most 2 an hour" in response.json()["error"] and int(response["Retry-After"]) > 0

    def test_the_run_it_was_shared_from_is_kept_only_when_it_ran_this_code(self, client):
        run = saved_run("print(2)\n", [{"type": "stdout", "text": "2\n"}])
        kept = share(client, 201, code="print(2)\n", run=str(run.id))
        assert kept["run"] == str(run.id)
        edited = share(client, 201, code="print(3)\n", run=str(run.id))
        assert edited["run"] is None
        detail = client.get(f"/api/snippets/{kept['slug']}").json()
        assert detail["jax_version"] == "0.12.0.1" and detail["jaxlib_version"] == "0.12.0.1"
        assert [e["type"] for e in detail["run"]["events"]] == ["queued", "started", "stdout", "finished"]

    def test_a_run_on_a_specific_device_kind_is_kept_with_its_device(self, client):
        run = saved_run("print(4)\n", [{"type": "stdout", "text": "4\n"}], device="gpu:h200")
        shared = share(client, 201, code="print(4)\n", run=str(run.id))
        assert shared["run"] == str(run.id)
        detail = client.get(f"/api/snippets/{shared['slug']}").json()
        assert detail["device"] == "gpu:h200" and detail["run"]["id"] == str(run.id)
        # The same code saved for the plain kind is another snippet, without that run's output.
        plain = share(client, 201, code="print(4)\n", device="gpu", run=str(run.id))
        assert plain["slug"] != shared["slug"] and plain["run"] is None


class TestForks:
    def test_a_fork_says_where_it_came_from_and_the_original_lists_it_unchanged(self, client):
        original = share(client, 201, code="x = 1\n", title="Original")
        before = client.get(f"/api/snippets/{original['slug']}").json()
        fork = share(client, 201, code="x = 2\n", title="Fork", parent=original["slug"])

        child = client.get(f"/api/snippets/{fork['slug']}").json()
        assert child["parent"]["slug"] == original["slug"] and child["parent"]["title"] == "Original"
        parent = client.get(f"/api/snippets/{original['slug']}").json()
        assert [f["slug"] for f in parent["forks"]] == [fork["slug"]] and parent["forks_count"] == 1
        assert {k: parent[k] for k in ("code", "title", "created_at")} == {
            k: before[k] for k in ("code", "title", "created_at")}
        page = client.get(f"/s/{fork['slug']}").content.decode()
        assert f"/s/{original['slug']}" in page

    def test_the_originals_page_never_names_a_fork_as_itself(self, client):
        original = share(client, 201, code="x = 1\n", title="Original")["slug"]
        marked = share(client, 201, code="x = 2\n", title="Original (fork)", parent=original)["slug"]
        same = share(client, 201, code="x = 3\n", title="Original", parent=original)["slug"]  # a script's
        untitled = share(client, 201, code="x = 4\n", parent=original)["slug"]
        page = client.get(f"/s/{original}").content.decode()
        listed = re.search(r'<span class="snippet-forks">(.*?)</span>', page, re.S).group(1)
        assert re.findall(r'<a href="/s/(\w+)">([^<]*)</a>', listed) == [
            (marked, "Original (fork)"), (same, f"Original ({same})"), (untitled, untitled)]
        assert "3 forks" in listed


class TestOpeningALink:
    def test_opening_a_link_or_its_downloads_runs_nothing(self, client, redis_client):
        run = saved_run("print(4)\n", [{"type": "stdout", "text": "4\n"}])
        slug = share(client, 201, code="print(4)\n", run=str(run.id))["slug"]
        runs, queued = Run.objects.count(), redis_client.llen("exec.cpu")
        for path in (f"/s/{slug}", f"/embed/{slug}", f"/s/{slug}.py", f"/s/{slug}.ipynb", f"/s/{slug}.json",
                     f"/api/snippets/{slug}"):
            assert client.get(path).status_code == 200, path
        assert Run.objects.count() == runs and redis_client.llen("exec.cpu") == queued

    def test_the_page_carries_the_code_and_its_saved_run_for_the_script(self, client):
        run = saved_run("print(5)\n", [{"type": "stdout", "text": "5\n"}])
        slug = share(client, 201, code="print(5)\n", title="Five", run=str(run.id))["slug"]
        page = client.get(f"/s/{slug}").content.decode()
        data = json.loads(re.search(r'<script id="snippet-data" type="application/json">(.*?)</script>', page,
                                    re.S).group(1))
        assert data["code"] == "print(5)\n" and data["run"] == str(run.id) and data["slug"] == slug

    def test_unknown_and_removed_snippets(self, client):
        assert client.get("/s/bcdfghjkmnpq").status_code == 404
        assert client.get("/api/snippets/bcdfghjkmnpq").status_code == 404
        slug = share(client, 201, code="bad")["slug"]
        Snippet.objects.filter(slug=slug).update(removed_at="2026-11-30T00:00:00Z", removed_reason="spam")
        assert client.get(f"/s/{slug}").status_code == 410
        assert client.get(f"/s/{slug}.py").status_code == 410
        gone = client.get(f"/api/snippets/{slug}")
        assert gone.status_code == 410 and "spam" in gone.json()["error"]


class TestDownloads:
    CODE = "import matplotlib.pyplot as plt\nprint('hi')\nplt.plot([1, 2])\nplt.show()\n1 / 0\n"

    def make(self, client) -> str:
        run = saved_run(self.CODE, [
            {"type": "stdout", "text": "hi\n"},
            {"type": "display", "kind": "figure", "mime": "image/png", "data": PNG, "text": "<Figure>"},
            {"type": "stderr", "text": "careful\n"},
            {"type": "error", "exc_type": "ZeroDivisionError", "message": "division by zero", "line": 5,
             "traceback": "Traceback (most recent call last):\nZeroDivisionError: division by zero"},
        ])
        return share(client, 201, code=self.CODE, title="Plot", description="A *plot*.", run=str(run.id))["slug"]

    def test_the_raw_code(self, client):
        slug = self.make(client)
        response = client.get(f"/s/{slug}.py")
        assert response.content.decode() == self.CODE
        assert response["Content-Type"].startswith("text/x-python")

    def test_a_notebook_with_the_saved_outputs_that_validates(self, client):
        slug = self.make(client)
        response = client.get(f"/s/{slug}.ipynb")
        assert f'filename="{slug}.ipynb"' in response["Content-Disposition"]
        nb = nbformat.reads(response.content.decode(), as_version=4)
        nbformat.validate(nb)
        markdown_cell, code_cell = nb.cells
        assert "# Plot" in markdown_cell.source and f"/s/{slug}" in markdown_cell.source
        assert code_cell.source == self.CODE
        kinds = [(o.output_type, o.get("name")) for o in code_cell.outputs]
        assert kinds == [("stream", "stdout"), ("display_data", None), ("stream", "stderr"), ("error", None)]
        assert code_cell.outputs[1].data["image/png"] == PNG
        assert code_cell.outputs[3].ename == "ZeroDivisionError"

    def test_the_json_has_everything_the_api_gives(self, client):
        slug = self.make(client)
        full = client.get(f"/s/{slug}.json").json()
        api = client.get(f"/api/snippets/{slug}").json()
        assert full == api
        assert full["description_html"] == "<p>A <em>plot</em>.</p>\n"

    def test_the_first_figure_is_the_links_preview_image(self, client):
        slug = self.make(client)
        image = client.get(f"/s/{slug}/figure.png")
        assert image["Content-Type"] == "image/png" and image.content == base64.b64decode(PNG)
        page = client.get(f"/s/{slug}").content.decode()
        assert f'<meta property="og:image" content="http://testserver/s/{slug}/figure.png">' in page
        assert '<meta property="og:title" content="Plot">' in page
        assert '<meta name="twitter:card" content="summary_large_image">' in page


class TestSafety:
    HOSTILE = "<script>alert(1)</script>"

    def test_titles_descriptions_code_and_output_are_never_markup(self, client):
        code = f"print('{self.HOSTILE}')  # </script><script>alert(2)</script>\n"
        run = saved_run(code, [{"type": "stdout", "text": self.HOSTILE + "\n"}])
        slug = share(client, 201, code=code, title=self.HOSTILE, run=str(run.id),
                     description=f"{self.HOSTILE} <img src=x onerror=alert(3)> [click](javascript:alert(4))")["slug"]
        page = client.get(f"/s/{slug}").content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page and 'href="javascript' not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        html = client.get(f"/api/snippets/{slug}").json()["description_html"]
        assert "<script>" not in html and "<img" not in html and 'href="javascript' not in html
        assert "[click](javascript:alert(4))" in html  # shown as text, not a link

    def test_links_in_descriptions_are_http_only_and_nofollow(self, client):
        described = "See [the docs](https://jax.dev) or [me](mailto:a@b.c)."
        slug = share(client, 201, code="x", description=described)["slug"]
        html = client.get(f"/api/snippets/{slug}").json()["description_html"]
        assert '<a href="https://jax.dev" rel="nofollow noopener">the docs</a>' in html
        assert client.get(f"/s/{slug}").status_code == 200

    def test_every_page_has_a_content_security_policy_without_inline_script(self, client):
        slug = share(client, 201, code="print(6)")["slug"]
        for path in ("/", f"/s/{slug}", "/accounts/login/"):
            csp = client.get(path)["Content-Security-Policy"]
            script_src = re.search(r"script-src ([^;]*)", csp).group(1)
            assert script_src.strip() == "'self'", (path, csp)
            assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
        embed = client.get(f"/embed/{slug}")
        assert "frame-ancestors *" in embed["Content-Security-Policy"]
        assert "X-Frame-Options" not in embed.headers
        assert client.get("/")["X-Frame-Options"] == "DENY"
