"""The notebooks' part of the OpenAPI document: every path it describes is routed to the API, and
the shapes it names are in the document."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import resolve

pytestmark = pytest.mark.django_db

ROUTES = {"/api/notebooks": "api-notebooks", "/api/notebooks/{notebook_id}": "api-notebook",
          "/api/notebooks/{notebook_id}/fork": "api-notebook-fork", "/api/notebooks/share": "api-notebooks-share",
          "/api/notebooks/shared/{slug}": "api-notebooks-shared",
          "/api/notebooks/shared/{slug}/fork": "api-notebooks-shared-fork",
          "/api/notebooks/import": "api-notebooks-import", "/api/cells/names": "api-cells-names"}


NOTEBOOK_ID = "0b1e4c3a-5d6f-4a7b-8c9d-0e1f2a3b4c5d"


def test_every_notebook_path_is_documented_and_routed_to_its_view(client):
    doc = client.get("/api/openapi.json").json()
    for path, name in ROUTES.items():
        assert path in doc["paths"], path
        concrete = path.replace("{notebook_id}", NOTEBOOK_ID).replace("{slug}", "bcdfghjkmnpq")
        assert resolve(concrete).url_name == name, path


def test_every_schema_the_notebook_paths_name_is_in_the_document(client):
    doc = client.get("/api/openapi.json").json()
    text = json.dumps({path: doc["paths"][path] for path in ROUTES}) + json.dumps(doc["components"]["schemas"])
    named = set(re.findall(r'"#/components/schemas/(\w+)"', text))
    assert {"Notebook", "NotebookConflict", "Cell", "CellNames", "SharedNotebook"} <= named
    assert named <= set(doc["components"]["schemas"]), named - set(doc["components"]["schemas"])
