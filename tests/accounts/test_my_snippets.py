"""/me/snippets/: one's own snippets, newest first, searchable; Delete hides one (its link keeps
working, marked noindex) without removing it."""

from __future__ import annotations

import pytest

from snippets.models import Snippet

from .helpers import share

pytestmark = pytest.mark.django_db


def test_it_lists_ones_own_snippets_newest_first(alice_client, alice, bob):
    older = share(alice, "import jax\nprint(jax.devices())", title="Devices")
    newer = share(alice, "\n\nx = jnp.ones(3)\n")
    theirs = share(bob, "print('bob')", title="Bob's")
    page = alice_client.get("/me/snippets/").content.decode()
    assert f'href="/s/{older.slug}"' in page and f'href="/s/{newer.slug}"' in page
    assert page.index(newer.slug) < page.index(older.slug)
    assert "Devices" in page
    assert "x = jnp.ones(3)" in page  # an untitled snippet shows its first line
    assert theirs.slug not in page and "Bob&#x27;s" not in page
    assert "link keeps working" in page


@pytest.mark.parametrize(("q", "found"), [("grad", "by-code"), ("MLP", "by-title"), ("sharded", "by-description")])
def test_it_searches_title_description_and_code(alice_client, alice, q, found):
    snippets = {
        "by-code": share(alice, "jax.grad(f)(x)"),
        "by-title": share(alice, "a = 1", title="A tiny MLP"),
        "by-description": share(alice, "b = 2", description="Arrays **sharded** over devices"),
    }
    page = alice_client.get("/me/snippets/", {"q": q}).content.decode()
    assert [name for name, s in snippets.items() if s.slug in page] == [found]


def test_it_says_when_a_search_finds_nothing(alice_client, alice):
    share(alice, "a = 1")
    page = alice_client.get("/me/snippets/", {"q": "nothing like it"}).content.decode()
    assert "No snippet of yours matches" in page


def test_delete_hides_a_snippet_whose_link_keeps_working(alice_client, alice):
    snippet = share(alice, "print('bye')", title="Going")
    response = alice_client.post(f"/me/snippets/{snippet.slug}/delete/", {"q": "bye"}, follow=True)
    assert response.redirect_chain == [("/me/snippets/?q=bye", 302)]
    page = response.content.decode()
    assert "Snippet deleted" in page
    assert f"/s/{snippet.slug}" not in page
    snippet.refresh_from_db()
    assert snippet.hidden_at is not None

    opened = alice_client.get(f"/s/{snippet.slug}")
    assert opened.status_code == 200
    assert opened["X-Robots-Tag"] == "noindex"
    assert alice_client.get("/api/me/snippets").json()["snippets"] == []


def test_it_cannot_delete_someone_elses_snippet(alice_client, bob):
    theirs = share(bob, "print('mine')")
    assert alice_client.post(f"/me/snippets/{theirs.slug}/delete/").status_code == 404
    assert Snippet.objects.get(pk=theirs.pk).hidden_at is None


def test_delete_takes_a_post(alice_client, alice):
    snippet = share(alice, "a = 1")
    assert alice_client.get(f"/me/snippets/{snippet.slug}/delete/").status_code == 405
    assert Snippet.objects.get(pk=snippet.pk).hidden_at is None
