"""A person's notebooks through the real URLs: saving, versions, owner-only access, deletion,
forks of one's own, the list page and the pages every notebook opens on."""

from __future__ import annotations

import json

import pytest

from notebooks.models import Notebook

from .helpers import post

pytestmark = pytest.mark.django_db

CELLS = [{"id": "a1", "type": "markdown", "source": "# Sines"},
         {"id": "b2", "type": "code", "source": "import jax.numpy as jnp\nx = jnp.sin(1.0)"}]


def put(client, notebook_id, body):
    return client.put(f"/api/notebooks/{notebook_id}", json.dumps(body), content_type="application/json")


def page_data(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="notebook-data" type="application/json">') + len(
        '<script id="notebook-data" type="application/json">')
    return json.loads(html[start:html.index("</script>", start)])


@pytest.fixture
def made(alice_client) -> dict:
    return post(alice_client, "/api/notebooks", {"title": "Sines", "cells": CELLS}, 201)


class TestSaving:
    def test_a_new_notebook_is_saved_with_its_cells_at_version_1(self, made, alice):
        assert made["version"] == 1 and made["title"] == "Sines" and made["cells"] == CELLS
        assert made["url"] == f"/notebooks/{made['id']}" and made["save_url"] == f"/api/notebooks/{made['id']}"
        assert made["device"] == "cpu" and made["runtime"]
        assert Notebook.objects.get(pk=made["id"]).owner == alice

    def test_a_cell_without_an_id_gets_one_and_ids_must_differ(self, alice_client):
        made = post(alice_client, "/api/notebooks", {"cells": [{"type": "code", "source": "1"}]}, 201)
        assert made["cells"][0]["id"] and made["cells"][0]["type"] == "code"
        twice = post(alice_client, "/api/notebooks", {"cells": [{"id": "x", "source": ""}, {"id": "x", "source": ""}]},
                     400)
        assert "cell 2's id 'x' is another cell's too" in twice["error"]

    def test_signed_out_saving_is_refused_with_words(self, client):
        refused = post(client, "/api/notebooks", {"cells": CELLS}, 403)
        assert "sign in" in refused["error"] and "draft" in refused["error"]
        assert client.get("/api/notebooks").status_code == 401
        assert Notebook.objects.count() == 0

    @pytest.mark.parametrize("body, message", [
        ([1], "JSON object"),
        ({"cells": "x"}, "'cells' must be a list"),
        ({"cells": [1]}, "cell 1 must be an object"),
        ({"cells": [{"type": "raw", "source": ""}]}, "cell 1's type must be"),
        ({"cells": [{"source": 5}]}, "cell 1's source must be a string"),
        ({"cells": [{"source": "x" * (64 * 1024 + 1)}]}, "cell 1 is 65537 bytes; the limit is 65536"),
        ({"cells": [{"source": "", "run": "nope"}]}, "cell 1's run must be a run's id"),
        ({"title": "t" * 201}, "'title' is 201 characters"),
        ({"device": "abacus"}, "unknown device 'abacus'"),
        ({"runtime": "jax-0.0.0"}, "runtime"),
    ])
    def test_bad_input_is_a_clear_400_and_saves_nothing(self, alice_client, body, message):
        refused = post(alice_client, "/api/notebooks", body, 400)
        assert message in refused["error"]
        assert Notebook.objects.count() == 0

    def test_too_many_cells_or_bytes_are_refused(self, alice_client, settings):
        settings.NOTEBOOK_MAX_CELLS = 2
        refused = post(alice_client, "/api/notebooks", {"cells": [{"source": ""}] * 3}, 400)
        assert "the notebook has 3 cells; the limit is 2" in refused["error"]
        settings.NOTEBOOK_MAX_BYTES = 1024
        refused = post(alice_client, "/api/notebooks", {"cells": [{"source": "x" * 600}, {"source": "y" * 600}]}, 400)
        assert "1200 bytes in all; the limit is 1024" in refused["error"]

    def test_one_person_keeps_at_most_so_many(self, alice_client, settings):
        settings.NOTEBOOK_MAX_PER_PERSON = 1
        post(alice_client, "/api/notebooks", {}, 201)
        refused = post(alice_client, "/api/notebooks", {}, 409)
        assert "delete some first" in refused["error"]


class TestVersions:
    def test_a_save_bumps_the_version_and_changes_only_what_it_names(self, alice_client, made):
        saved = put(alice_client, made["id"], {"title": "Cosines", "version": 1})
        assert saved.status_code == 200
        assert saved.json()["version"] == 2 and saved.json()["title"] == "Cosines"
        assert saved.json()["cells"] == CELLS  # not sent, not changed
        again = put(alice_client, made["id"], {"cells": CELLS[:1]}).json()
        assert again["version"] == 3 and again["cells"] == CELLS[:1] and again["title"] == "Cosines"

    def test_a_stale_version_is_a_409_with_the_current_one_and_changes_nothing(self, alice_client, made):
        assert put(alice_client, made["id"], {"title": "From tab one", "version": 1}).status_code == 200
        stale = put(alice_client, made["id"], {"title": "From tab two", "version": 1})
        assert stale.status_code == 409
        body = stale.json()
        assert body["version"] == 2 and body["notebook"]["title"] == "From tab one"
        assert "saved elsewhere" in body["error"] and "version 2" in body["error"]
        assert Notebook.objects.get(pk=made["id"]).title == "From tab one"

    @pytest.mark.parametrize("version", ["2", 0, True, 1.5])
    def test_a_version_that_is_not_a_positive_integer_is_a_400(self, alice_client, made, version):
        response = put(alice_client, made["id"], {"title": "x", "version": version})
        assert response.status_code == 400 and "'version'" in response.json()["error"]


class TestOwnersOnly:
    def test_someone_elses_notebook_is_not_found_through_every_door(self, made, bob_client, client):
        for other in (bob_client, client):
            assert other.get(f"/api/notebooks/{made['id']}").status_code == 404
            assert put(other, made["id"], {"title": "mine now"}).status_code == 404
            assert other.delete(f"/api/notebooks/{made['id']}").status_code == 404
            assert other.post(f"/api/notebooks/{made['id']}/fork").status_code == 404
            assert other.get(f"/notebooks/{made['id']}").status_code == 404
            assert other.get(f"/notebooks/{made['id']}.ipynb").status_code == 404
        assert Notebook.objects.get(pk=made["id"]).title == "Sines"

    @pytest.mark.parametrize("notebook_id", ["nope", "0b1e4c3a-5d6f-4a7b-8c9d-0e1f2a3b4c5d", "..%2F..%2Fetc"])
    def test_an_unknown_id_is_a_json_404(self, alice_client, notebook_id):
        response = alice_client.get(f"/api/notebooks/{notebook_id}")
        assert response.status_code == 404 and "error" in response.json()

    def test_the_list_holds_only_ones_own(self, alice_client, bob_client, made):
        post(bob_client, "/api/notebooks", {"title": "Bob's"}, 201)
        listed = alice_client.get("/api/notebooks").json()["notebooks"]
        assert [(n["id"], n["title"], n["cells"], n["url"]) for n in listed] == [
            (made["id"], "Sines", 2, f"/notebooks/{made['id']}")]


class TestDeleteAndFork:
    def test_delete_is_a_204_and_the_notebook_is_gone(self, alice_client, made):
        assert alice_client.delete(f"/api/notebooks/{made['id']}").status_code == 204
        assert alice_client.get(f"/api/notebooks/{made['id']}").status_code == 404

    def test_forking_ones_own_makes_a_copy_that_changes_apart(self, alice_client, made):
        copy = post(alice_client, f"/api/notebooks/{made['id']}/fork", None, 201)
        assert copy["id"] != made["id"] and copy["title"] == "Sines (copy)" and copy["cells"] == CELLS
        put(alice_client, copy["id"], {"cells": []})
        assert alice_client.get(f"/api/notebooks/{made['id']}").json()["cells"] == CELLS


class TestPages:
    def test_the_own_page_carries_the_notebook_for_its_script(self, alice_client, made):
        response = alice_client.get(f"/notebooks/{made['id']}")
        assert response.status_code == 200
        data = page_data(response)
        assert data["id"] == made["id"] and data["cells"] == CELLS and data["editable"] is True
        assert data["save_url"] == f"/api/notebooks/{made['id']}" and data["version"] == 1
        assert data["shared"] is None and data["signed_in"] is True and data["import_error"] is None

    def test_a_new_notebook_is_anyones_and_unsaved(self, client):
        data = page_data(client.get("/notebooks/new"))
        assert data["id"] is None and data["save_url"] is None and data["editable"] is True
        assert data["signed_in"] is False and len(data["cells"]) == 1 and data["cells"][0]["type"] == "code"

    def test_a_signed_out_draft_has_an_address_of_its_own(self, client):
        """/notebooks/draft/<id>: the new notebook's page, told which of the browser's drafts it
        is (only the browser holds it); an id of another shape is no page."""
        data = page_data(client.get("/notebooks/draft/abcdefghij12"))
        assert data["draft"] == "abcdefghij12" and data["id"] is None and data["editable"] is True
        assert page_data(client.get("/notebooks/new"))["draft"] is None
        assert client.get("/notebooks/draft/ABC").status_code == 404
        assert client.get("/notebooks/draft/abcdefghij12x").status_code == 404

    def test_the_list_page_lists_ones_notebooks_and_says_where_drafts_are_when_signed_out(self, alice_client,
                                                                                             client, made):
        mine = alice_client.get("/notebooks/").content.decode()
        assert "Sines" in mine and f"/notebooks/{made['id']}" in mine and "/notebooks/new" in mine
        theirs = client.get("/notebooks/").content.decode()
        assert "kept in this browser" in theirs and "/notebooks/new" in theirs and "Sines" not in theirs

    def test_the_list_pages_delete_button_deletes(self, alice_client, bob_client, made):
        assert bob_client.post(f"/notebooks/{made['id']}/delete").status_code == 404
        response = alice_client.post(f"/notebooks/{made['id']}/delete")
        assert response.status_code == 302 and response["Location"] == "/notebooks/"
        assert not Notebook.objects.filter(pk=made["id"]).exists()
