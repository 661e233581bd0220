"""A snippet shared unrun keeps its sharer's first run, never a visitor's, and only whoever started
a snippet's run may cancel it; a notebook download carries the description as the page shows it
(no raw HTML, no images)."""

from __future__ import annotations

import nbformat
import pytest
from django.test import Client

from snippets.models import Snippet

pytestmark = pytest.mark.django_db

CODE = "print('first run')\n"
SHARER, VISITOR = "203.0.113.7", "198.51.100.9"


@pytest.fixture(autouse=True)
def _clean(redis_client):
    for key in redis_client.scan_iter("ratelimit:*"):
        redis_client.delete(key)


@pytest.fixture
def executor_online():
    from executor import registry
    from playground.redis import get_redis

    name = "cpu-sharing-tests@localhost"
    registry.beat(get_redis(), name, "cpu", {"slots": 1, "sandboxed": True})
    yield
    registry.leave(get_redis(), name, "cpu")


def post(address: str, path: str, body=None):
    return Client(REMOTE_ADDR=address).post(path, body or {}, content_type="application/json")


def share_unrun() -> str:
    response = post(SHARER, "/api/snippets", {"code": CODE})
    assert response.status_code == 201 and response.json()["run"] is None
    return response.json()["slug"]


def test_a_visitors_run_is_not_kept_as_the_first_run(executor_online):
    slug = share_unrun()
    visitor = post(VISITOR, "/api/runs", {"code": CODE, "snippet": slug})
    assert visitor.status_code == 201
    assert Snippet.objects.get(slug=slug).run_id is None
    sharer = post(SHARER, "/api/runs", {"code": CODE, "snippet": slug})
    assert str(Snippet.objects.get(slug=slug).run_id) == sharer.json()["id"]


def test_a_signed_in_sharer_is_known_from_any_address(executor_online, django_user_model):
    alice = django_user_model.objects.create_user("alice", "alice@example.com", "x")
    at_home, on_the_train = Client(REMOTE_ADDR=SHARER), Client(REMOTE_ADDR=VISITOR)
    at_home.force_login(alice)
    on_the_train.force_login(alice)
    slug = at_home.post("/api/snippets", {"code": CODE}, content_type="application/json").json()["slug"]
    run = on_the_train.post("/api/runs", {"code": CODE, "snippet": slug}, content_type="application/json").json()
    assert str(Snippet.objects.get(slug=slug).run_id) == run["id"]


def test_only_its_starter_may_cancel_a_snippets_first_run(executor_online):
    slug = share_unrun()
    run = post(SHARER, "/api/runs", {"code": CODE, "snippet": slug}).json()
    refused = post(VISITOR, f"/api/runs/{run['id']}/cancel")
    assert refused.status_code == 403
    assert "only whoever started it" in refused.json()["error"]
    assert post(SHARER, f"/api/runs/{run['id']}/cancel").status_code == 202


def test_a_run_no_snippet_keeps_may_be_cancelled_by_whoever_holds_its_id(executor_online):
    run = post(SHARER, "/api/runs", {"code": CODE}).json()
    assert post(VISITOR, f"/api/runs/{run['id']}/cancel").status_code == 202


def test_the_notebook_carries_the_description_as_the_page_shows_it():
    description = ("A *plot* <img src=x onerror=alert(1)> and ![tracker](https://evil.example/pixel.png)\n\n"
                   "<script>alert(2)</script>\n\n```\ncode\n\nwith a blank line\n```\n\nLast ![x](https://e.example/i.png)")
    slug = post(SHARER, "/api/snippets", {"code": CODE, "title": "<b>Bold</b> ![t](https://e.example/t.png)",
                                          "description": description}).json()["slug"]
    nb = nbformat.reads(Client().get(f"/s/{slug}.ipynb").content.decode(), as_version=4)
    nbformat.validate(nb)
    source = nb.cells[0].source
    # Rendered as a Markdown renderer would (markdown-it with HTML on, as Jupyter's is), nothing
    # of it is an image or raw HTML.
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).render(source)
    for forbidden in ("<img", "<script", "<b>"):
        assert forbidden not in rendered, rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered  # shown as text, as on the page
    assert "<em>plot</em>" in rendered
    assert "with a blank line" in rendered
    assert source.startswith("# ")
