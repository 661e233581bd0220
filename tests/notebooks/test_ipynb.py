"""Notebooks as .ipynb files, both ways: an export holds the cells and their runs' outputs and
imports back as the same cells; bad files are 400s that say what is wrong; a URL import reads only
this site's own export links, from the database; a shared snippet opens as a notebook."""

from __future__ import annotations

import json

import nbformat
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from notebooks.models import Notebook
from snippets.models import Snippet

from .helpers import post, saved_run
from .test_api import page_data

pytestmark = pytest.mark.django_db

CELLS = [{"id": "intro", "type": "markdown", "source": "# Sines\n\nThe *sine* of one."},
         {"id": "code-1", "type": "code", "source": "import math\nprint(math.sin(1))"},
         {"id": "code-2", "type": "code", "source": "raise ValueError('no')"}]


def upload(client, data: bytes, status: int = 200) -> dict:
    response = client.post("/api/notebooks/import", {"file": SimpleUploadedFile("n.ipynb", data)})
    assert response.status_code == status, response.content
    return response.json()


def exported(client, url: str) -> nbformat.NotebookNode:
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ipynb+json"
    assert response["Content-Disposition"].startswith("attachment; filename=")
    nb = nbformat.reads(response.content.decode(), as_version=4)
    nbformat.validate(nb)
    return nb


@pytest.fixture
def runs():
    printed = saved_run(CELLS[1]["source"], [{"type": "stdout", "text": "0.84\n"}])
    failed = saved_run(CELLS[2]["source"], [{"type": "error", "exc_type": "ValueError", "message": "no",
                                             "traceback": "Traceback\nValueError: no"}])
    return printed, failed


@pytest.fixture
def shared(client, runs) -> dict:
    cells = [CELLS[0], {**CELLS[1], "run": str(runs[0].id)}, {**CELLS[2], "run": str(runs[1].id)}]
    return post(client, "/api/notebooks/share", {"title": "Sines", "cells": cells}, 201)


class TestExport:
    def test_a_shared_notebook_exports_with_its_runs_outputs(self, client, shared):
        nb = exported(client, shared["ipynb_url"])
        header, *cells = nb.cells
        assert header.metadata["jaxplay"] == "header" and "# Sines" in header.source
        assert f"http://testserver/n/{shared['slug']}" in header.source
        assert [(c.cell_type, c.source) for c in cells] == [(c["type"], c["source"]) for c in CELLS]
        assert [c.id for c in cells] == ["intro", "code-1", "code-2"]
        assert cells[1].outputs == [nbformat.v4.new_output("stream", name="stdout", text="0.84\n")]
        assert cells[1].execution_count == 1 and cells[2].execution_count == 2
        error = cells[2].outputs[0]
        assert (error.output_type, error.ename, error.evalue) == ("error", "ValueError", "no")
        assert nb.metadata["jaxplay"]["title"] == "Sines" and nb.metadata["kernelspec"]["name"] == "python3"

    def test_ones_own_notebook_exports_only_to_its_owner(self, alice_client, bob_client, runs):
        cells = [CELLS[0], {**CELLS[1], "run": str(runs[0].id)}]
        made = post(alice_client, "/api/notebooks", {"title": "Mine", "cells": cells}, 201)
        nb = exported(alice_client, f"/notebooks/{made['id']}.ipynb")
        assert nb.cells[2].outputs[0].text == "0.84\n" and nb.metadata["jaxplay"]["title"] == "Mine"
        assert bob_client.get(f"/notebooks/{made['id']}.ipynb").status_code == 404

    def test_code_that_imports_jaxplay_gets_the_cell_that_defines_it_and_imports_without_it(self, client):
        cells = [{"id": "j", "type": "code", "source": "import jaxplay\njaxplay.show(1)"}]
        made = post(client, "/api/notebooks/share", {"cells": cells}, 201)
        nb = exported(client, made["ipynb_url"])
        assert [c.metadata.get("jaxplay") for c in nb.cells] == ["header", "helper", None]
        back = upload(client, nbformat.writes(nb).encode())
        assert [(c["type"], c["source"]) for c in back["cells"]] == [("code", cells[0]["source"])]


class TestRoundTrip:
    def test_an_exported_notebook_imports_as_the_same_cells(self, client, alice_client, shared):
        data = client.get(shared["ipynb_url"]).content
        back = upload(client, data)
        assert back["title"] == "Sines"
        assert [(c["id"], c["type"], c["source"]) for c in back["cells"]] == [
            (c["id"], c["type"], c["source"]) for c in CELLS]
        assert all("run" not in cell for cell in back["cells"])  # a file's outputs are not runs here
        # ...and saved, it is a notebook of those cells.
        made = post(alice_client, "/api/notebooks", back, 201)
        assert [c["source"] for c in Notebook.objects.get(pk=made["id"]).cells] == [c["source"] for c in CELLS]

    def test_a_foreign_notebook_imports_its_code_markdown_and_raw_cells(self, client):
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_markdown_cell("Hello"), nbformat.v4.new_code_cell("x = 1", outputs=[]),
            nbformat.v4.new_raw_cell("raw text")], metadata={"title": "Foreign"})
        back = upload(client, nbformat.writes(nb).encode())
        assert back["title"] == "Foreign"
        assert [(c["type"], c["source"]) for c in back["cells"]] == [
            ("markdown", "Hello"), ("code", "x = 1"), ("markdown", "raw text")]

    def test_source_as_a_list_of_lines_is_joined(self, client):
        data = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                           "cells": [{"cell_type": "code", "source": ["a = 1\n", "b = 2"], "metadata": {}}]})
        assert upload(client, data.encode())["cells"][0]["source"] == "a = 1\nb = 2"


class TestBadFiles:
    @pytest.mark.parametrize("data, message", [
        (b"{not json", "it is not JSON"),
        (b"\xff\xfe", "it is not JSON"),
        (b"[1, 2]", "it has no 'nbformat'"),
        (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3; only nbformat 4 is read"),
        (json.dumps({"nbformat": 4, "cells": {}}).encode(), "'cells' is not a list"),
        (json.dumps({"nbformat": 4, "cells": [{"cell_type": "widget", "source": ""}]}).encode(),
         "cell 1 is of an unknown type 'widget'"),
        (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}).encode(),
         "cell 1 has a source that is neither"),
    ])
    def test_a_bad_file_is_a_400_that_says_what_is_wrong(self, client, data, message):
        assert message in upload(client, data, 400)["error"]

    def test_a_file_over_the_limit_is_refused_before_it_is_read(self, client, settings):
        settings.NOTEBOOK_IMPORT_MAX_BYTES = 2048
        big = json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": "x" * 4000}]}).encode()
        refused = upload(client, big, 400)
        assert "the limit is 2048 bytes" in refused["error"]

    def test_too_many_cells_or_too_large_a_cell_is_refused(self, client, settings):
        settings.NOTEBOOK_MAX_CELLS = 2
        many = {"nbformat": 4, "cells": [{"cell_type": "code", "source": ""}] * 3}
        assert "3 cells; the limit is 2" in upload(client, json.dumps(many).encode(), 400)["error"]
        settings.RUN_MAX_CODE_BYTES = 10
        large = {"nbformat": 4, "cells": [{"cell_type": "code", "source": "x" * 11}]}
        assert "cell 1 is 11 bytes; the limit is 10" in upload(client, json.dumps(large).encode(), 400)["error"]

    def test_no_file_is_a_400(self, client):
        response = client.post("/api/notebooks/import", {"other": "x"})
        assert response.status_code == 400 and "'file'" in response.json()["error"]


class TestUrls:
    def test_the_sites_own_notebook_link_imports_with_its_runs(self, client, shared, runs):
        for url in (shared["ipynb_url"], shared["url"], f"http://testserver{shared['ipynb_url']}"):
            back = post(client, "/api/notebooks/import", {"url": url}, 200)
            assert [c["source"] for c in back["cells"]] == [c["source"] for c in CELLS]
            assert back["cells"][1]["run"] == str(runs[0].id) and back["title"] == "Sines"

    def test_a_shared_snippet_link_imports_as_a_notebook(self, client):
        run = saved_run("print(5)", [])
        made = post(client, "/api/snippets", {"code": "print(5)", "title": "Five", "description": "Prints 5",
                                              "run": str(run.id)}, 201)
        back = post(client, "/api/notebooks/import", {"url": f"/s/{made['slug']}.ipynb"}, 200)
        assert back["title"] == "Five"
        assert [(c["type"], c["source"]) for c in back["cells"]] == [("markdown", "# Five\n\nPrints 5"),
                                                                     ("code", "print(5)")]
        assert back["cells"][1]["run"] == str(run.id)

    @pytest.mark.parametrize("url, message", [
        ("https://example.com/n/bcdfghjkmnpq.ipynb", "never another site's"),
        ("//example.com/n/bcdfghjkmnpq.ipynb", "never another site's"),
        ("file:///etc/passwd", "can be imported"),
        ("/api/runs", "can be imported"),
        ("/n/../../etc/passwd", "can be imported"),
        (5, "'url' must be one of"),
    ])
    def test_anything_but_the_sites_own_export_links_is_refused(self, client, url, message):
        assert message in post(client, "/api/notebooks/import", {"url": url}, 400)["error"]

    def test_a_link_that_names_nothing_is_a_404(self, client):
        assert post(client, "/api/notebooks/import", {"url": "/n/bcdfghjkmnpq.ipynb"}, 404)["error"]
        assert post(client, "/api/notebooks/import", {"url": "/s/bcdfghjkmnpq.ipynb"}, 404)["error"]


class TestNewFrom:
    def test_new_with_a_snippet_opens_it_as_a_one_code_cell_notebook(self, client):
        Snippet.objects.create(slug="bcdfghjkmnpq", content_hash="h", code="print(7)", device="cpu")
        data = page_data(client.get("/notebooks/new?snippet=bcdfghjkmnpq"))
        assert [(c["type"], c["source"]) for c in data["cells"]] == [("code", "print(7)")]
        assert data["import_error"] is None and data["id"] is None and data["editable"] is True

    def test_new_with_an_import_link_opens_it_and_a_bad_one_says_why(self, client, shared):
        data = page_data(client.get(f"/notebooks/new?import={shared['ipynb_url']}"))
        assert data["title"] == "Sines" and len(data["cells"]) == 3 and data["import_error"] is None
        bad = page_data(client.get("/notebooks/new?import=https://example.com/x.ipynb"))
        assert "never another site's" in bad["import_error"] and len(bad["cells"]) == 1
        missing = page_data(client.get("/notebooks/new?snippet=nosuchslug23"))
        assert "no shared snippet" in missing["import_error"]
