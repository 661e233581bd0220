"""Sharing real runs through the running stack (daphne, the recorder, an executor): the link
keeps the output the code gave, and a snippet shared unrun keeps its first run."""

from __future__ import annotations

import nbformat
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

CODE = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2)\nprint(f(jnp.arange(3)))\n"


def test_a_shared_run_travels_with_its_link(live_stack):
    status, run = live_stack.post("/api/runs", {"code": CODE})
    assert status == 201
    finished = live_stack.wait_finished(run["id"])
    assert finished["status"] == "succeeded"

    status, shared = live_stack.post("/api/snippets", {"code": CODE, "title": "Doubling", "run": run["id"]})
    assert status == 201 and shared["run"] == run["id"]
    assert shared["url"] == f"{live_stack.url}/s/{shared['slug']}"
    snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
    assert snippet["jax_version"] == finished["events"][1]["jax_version"]
    types = [e["type"] for e in snippet["run"]["events"]]
    assert "compiled" in types and types[-1] == "finished"
    assert "[0 2 4]" in "".join(e.get("text", "") for e in snippet["run"]["events"])

    nb = nbformat.reads(live_stack.fetch_text(f"/s/{shared['slug']}.ipynb"), as_version=4)
    nbformat.validate(nb)
    assert "[0 2 4]" in nb.cells[1].outputs[0].text


def test_a_snippet_shared_unrun_keeps_its_first_run(live_stack):
    code = "print('first run')\n"
    status, shared = live_stack.post("/api/snippets", {"code": code})
    assert status == 201 and shared["run"] is None
    status, run = live_stack.post("/api/runs", {"code": code, "snippet": shared["slug"]})
    assert status == 201
    live_stack.wait_finished(run["id"])
    status, second = live_stack.post("/api/runs", {"code": code, "snippet": shared["slug"]})
    live_stack.wait_finished(second["id"])
    snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
    assert snippet["run"]["id"] == run["id"]  # the first, not the latest


def test_a_script_with_a_token_shares_as_its_owner_through_the_server(live_stack):
    import json
    import urllib.error
    import urllib.request

    from django.contrib.auth.models import User

    from accounts.actions import do_create_token

    user = User.objects.create_user("scripter", password="a long passphrase 42")
    _token, secret = do_create_token(user, "laptop")

    def call(method: str, path: str, body=None, secret_: str = secret):
        request = urllib.request.Request(live_stack.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {secret_}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    status, shared = call("POST", "/api/snippets", {"code": "print('from a script')", "title": "Scripted"})
    assert status == 201
    status, mine = call("GET", "/api/me/snippets")
    assert status == 200 and [s["slug"] for s in mine["snippets"]] == [shared["slug"]]
    assert live_stack.get(f"/api/snippets/{shared['slug']}")["owner"] == "scripter"
    status, refused = call("GET", "/api/me/snippets", secret_="jpg_not-a-real-token")
    assert status == 401 and "token" in refused["error"]
