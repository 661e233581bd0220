"""Shared notebooks: content-addressed links, the runs they keep (and protect from deletion),
their read-only page, and forks into one's own notebook or a signed-out person's draft."""

from __future__ import annotations

import re

import pytest

from notebooks.models import Notebook, SharedNotebook
from playground.actions.runs import check_delete_run
from playground.models import Run
from snippets.slugs import ALPHABET, LENGTH
from web.errors import ActionError

from .helpers import post, saved_run
from .test_api import page_data

pytestmark = pytest.mark.django_db

SHARE = {"title": "Sines", "cells": [{"type": "markdown", "source": "Two sines"},
                                     {"type": "code", "source": "print(1)"}], "device": "cpu"}


def share(client, body=None, status=(200, 201)) -> dict:
    return post(client, "/api/notebooks/share", body or SHARE, status)


class TestContentAddressing:
    def test_the_same_content_gives_the_same_link_and_other_content_another(self, client):
        first = share(client, status=201)
        assert re.fullmatch(f"[{ALPHABET}]{{{LENGTH}}}", first["slug"]) and first["created"] is True
        assert first["url"] == f"/n/{first['slug']}" and first["ipynb_url"] == f"/n/{first['slug']}.ipynb"
        again = share(client, status=200)
        assert again["slug"] == first["slug"] and again["created"] is False
        retitled = share(client, {**SHARE, "title": "Cosines"}, 201)
        edited = share(client, {**SHARE, "cells": [{"type": "code", "source": "print(2)"}]}, 201)
        on_gpu = share(client, {**SHARE, "device": "gpu"}, 201)
        assert len({first["slug"], retitled["slug"], edited["slug"], on_gpu["slug"]}) == 4
        assert SharedNotebook.objects.count() == 4

    def test_cell_ids_and_runs_do_not_change_the_link(self, client):
        run = saved_run("print(1)", [{"type": "stdout", "text": "1\n"}])
        plain = share(client, status=201)
        with_ids = {**SHARE, "cells": [{**cell, "id": f"id{i}"} for i, cell in enumerate(SHARE["cells"])]}
        with_ids["cells"][1]["run"] = str(run.id)
        assert share(client, with_ids, 200)["slug"] == plain["slug"]

    def test_an_empty_notebook_is_not_shared(self, client):
        assert "at least one cell" in share(client, {"cells": []}, 400)["error"]

    def test_sharing_is_rate_limited_per_client(self, client, settings):
        settings.NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR = 1
        share(client, status=201)
        refused = client.post("/api/notebooks/share", {**SHARE, "title": "Other"}, content_type="application/json")
        assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


class TestRuns:
    def test_a_run_of_the_cells_source_is_kept_another_is_left_out(self, client):
        ran = saved_run("print(1)", [{"type": "stdout", "text": "1\n"}])
        other = saved_run("print(3)", [])
        cells = [{"type": "code", "source": "print(1)", "run": str(ran.id)},
                 {"type": "code", "source": "print(2)", "run": str(other.id)},
                 {"type": "code", "source": "print(4)", "run": "0b1e4c3a-5d6f-4a7b-8c9d-0e1f2a3b4c5d"}]
        shared = share(client, {"cells": cells}, 201)
        detail = client.get(f"/api/notebooks/shared/{shared['slug']}").json()
        assert [cell.get("run") for cell in detail["cells"]] == [str(ran.id), None, None]
        assert list(SharedNotebook.objects.get(slug=shared["slug"]).runs.all()) == [ran]

    def test_a_kept_run_cannot_be_deleted_while_the_link_shows_it(self, client, alice):
        run = saved_run("print(1)", [], owner=alice)
        shared = share(client, {"cells": [{"type": "code", "source": "print(1)", "run": str(run.id)}]}, 201)
        with pytest.raises(ActionError) as refused:
            check_delete_run(run)
        assert refused.value.status == 409 and f"/n/{shared['slug']}" in refused.value.message
        assert Run.objects.filter(pk=run.pk).exists()

    def test_content_shared_without_outputs_takes_the_first_ones_shared_later(self, client):
        bare = share(client, status=201)
        run = saved_run("print(1)", [{"type": "stdout", "text": "1\n"}])
        cells = [SHARE["cells"][0], {**SHARE["cells"][1], "run": str(run.id)}]
        assert share(client, {**SHARE, "cells": cells}, 200)["slug"] == bare["slug"]
        kept = SharedNotebook.objects.get(slug=bare["slug"])
        assert kept.cells[1]["run"] == str(run.id) and list(kept.runs.all()) == [run]
        later = saved_run("print(1)", [])
        share(client, {**SHARE, "cells": [SHARE["cells"][0], {**SHARE["cells"][1], "run": str(later.id)}]}, 200)
        assert SharedNotebook.objects.get(slug=bare["slug"]).cells[1]["run"] == str(run.id)  # immutable now


class TestPageAndForks:
    def test_the_shared_page_is_read_only_with_its_links(self, client):
        shared = share(client, status=201)
        response = client.get(shared["url"])
        assert response.status_code == 200
        data = page_data(response)
        assert data["editable"] is False and data["id"] is None and data["save_url"] is None
        assert data["shared"] == {"slug": shared["slug"], "url": shared["url"], "ipynb_url": shared["ipynb_url"]}
        assert [cell["source"] for cell in data["cells"]] == ["Two sines", "print(1)"]
        assert client.get("/n/nosuchslug23").status_code == 404

    def test_a_fork_signed_in_is_a_new_notebook_of_ones_own(self, client, alice_client, alice):
        run = saved_run("print(1)", [])
        shared = share(client, {**SHARE, "cells": [{"type": "code", "source": "print(1)", "run": str(run.id)}]}, 201)
        fork = post(alice_client, f"/api/notebooks/shared/{shared['slug']}/fork", None, 201)
        notebook = Notebook.objects.get(pk=fork["id"])
        assert notebook.owner == alice and notebook.forked_from.slug == shared["slug"]
        assert fork["title"] == "Sines" and fork["cells"][0]["run"] == str(run.id)
        assert fork["forked_from"]["url"] == shared["url"]

    def test_a_fork_signed_out_is_a_draft_for_the_browser(self, client):
        shared = share(client, status=201)
        draft = post(client, f"/api/notebooks/shared/{shared['slug']}/fork", None, 200)
        assert draft["title"] == "Sines" and [c["source"] for c in draft["cells"]] == ["Two sines", "print(1)"]
        assert all(cell["id"] for cell in draft["cells"]) and draft["device"] == "cpu"
        assert Notebook.objects.count() == 0
        assert client.post("/api/notebooks/shared/nosuchslug23/fork").status_code == 404
