"""Comparisons through the real URLs, in-process: POST /api/comparisons starts both runs or none,
refuses what cannot be compared with a clear 4xx (or 503) and leaves nothing behind; the link's
API and page show both sides; a run a comparison keeps is not deleted from under it; a snippet
pinned to an older runtime offers to run on the newest beside its saved output. Both sides run
for real in tests/integration/test_comparisons.py and in Chromium in
tests/browser/test_comparisons.py."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from executor import events as ev
from executor import registry, runtimes
from playground.models import Run
from snippets.models import Comparison, Snippet
from snippets.slugs import ALPHABET, LENGTH
from tests.conftest import OLD_RUNTIME as OLD

pytestmark = pytest.mark.django_db

CODE = "import jax\nprint(jax.__version__)\n"
ADDRESS = "203.0.113.40"


@pytest.fixture(autouse=True)
def _clean(redis_client):
    for pattern in ("ratelimit:*", "quota:*", "active:*", "shares:*"):
        for key in redis_client.scan_iter(pattern):
            redis_client.delete(key)


@pytest.fixture
def executors_online(redis_client):
    """A CPU worker of the default runtime and one of OLD, as their heartbeats say (what a test's
    runs queue is sent only on commit, which a rolled-back test never reaches)."""
    names = [("cpu-compare-new@localhost", {}), ("cpu-compare-old@localhost", {"runtime": OLD})]
    for name, extra in names:  # as a CPU worker beats: its specific kind is "cpu:cpu"
        registry.beat(redis_client, name, "cpu", {"slots": 1, "sandboxed": True, **extra}, "cpu")
    yield
    for name, _ in names:
        registry.leave(redis_client, name, "cpu", "cpu")


def compare(body, client: Client | None = None):
    client = client or Client(REMOTE_ADDR=ADDRESS)
    return client.post("/api/comparisons", body, content_type="application/json")


def sides(*pairs):
    return [{"runtime": runtime, "device": device} for runtime, device in pairs]


def test_it_starts_both_runs_and_keeps_them_under_one_link(executors_online):
    response = compare({"code": CODE, "sides": sides((OLD, "cpu"), (runtimes.FIRST, "cpu"))})
    assert response.status_code == 201, response.content
    made = response.json()
    assert re.fullmatch(f"[{ALPHABET}]{{{LENGTH}}}", made["slug"])
    assert made["url"] == f"http://testserver/compare/{made['slug']}"
    a, b = made["sides"]
    assert (a["name"], a["runtime"], a["jax"], a["label"]) == ("A", OLD, "0.4.38", "JAX 0.4.38 · CPU")
    assert (b["name"], b["runtime"], b["label"]) == ("B", runtimes.FIRST, f"JAX {runtimes.FIRST[4:]} · CPU")
    runs = {run.id: run for run in Run.objects.all()}
    assert len(runs) == 2 and {str(i) for i in runs} == {a["run"]["id"], b["run"]["id"]}
    assert all(run.code == CODE and run.status == ev.STATUS_QUEUED for run in runs.values())
    assert a["run"]["ws"] == f"/ws/runs/{a['run']['id']}/"
    # The same through GET, and a page that names both sides and carries them for its script.
    assert Client().get(f"/api/comparisons/{made['slug']}").json()["sides"] == made["sides"]
    page = Client().get(f"/compare/{made['slug']}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "JAX 0.4.38 · CPU vs JAX 0.12.0.1 · CPU" in html and 'data-page="compare"' in html
    data = json.loads(re.search(r'<script id="comparison-data" type="application/json">(.*?)</script>',
                                html, re.S).group(1))
    assert data["code"] == CODE and [s["run"]["id"] for s in data["sides"]] == [a["run"]["id"], b["run"]["id"]]


def test_two_devices_of_one_runtime_compare_too(executors_online, redis_client):
    registry.beat(redis_client, "gpu-compare@localhost", "gpu", {"slots": 1, "sandboxed": True}, "h200")
    try:
        response = compare({"code": CODE, "sides": sides((None, "cpu"), (None, "gpu:h200")), "title": "  CPU or GPU "})
    finally:
        registry.leave(redis_client, "gpu-compare@localhost", "gpu", "h200")
    assert response.status_code == 201, response.content
    made = response.json()
    assert made["title"] == "CPU or GPU"
    where = [(s["device"], s["runtime"]) for s in made["sides"]]
    assert where == [("cpu", runtimes.FIRST), ("gpu:h200", runtimes.FIRST)]
    assert "two devices" in Client().get(f"/compare/{made['slug']}").content.decode()


@pytest.mark.parametrize("body, status, words", [
    ({"code": CODE, "sides": sides((OLD, "cpu"), (OLD, "cpu"))}, 400, "both sides are JAX 0.4.38"),
    ({"code": CODE, "sides": sides((None, "cpu"), (runtimes.FIRST, "cpu"))}, 400, "compare two runtimes"),
    ({"code": CODE, "sides": sides((OLD, "cpu"))}, 400, "a list of two objects"),
    ({"code": CODE, "sides": {"a": 1}}, 400, "a list of two objects"),
    ({"code": CODE, "sides": [1, 2]}, 400, "a list of two objects"),
    ({"code": CODE}, 400, "a list of two objects"),
    ({"code": CODE, "sides": sides(("jax-9.9", "cpu"), (OLD, "cpu"))}, 400, "jax-0.4.38"),
    ({"code": CODE, "sides": sides(("jax-0.6.2", "cpu"), (OLD, "cpu"))}, 503, "runtime jax-0.6.2"),
    ({"code": CODE, "sides": sides((OLD, "quantum"), (OLD, "cpu"))}, 400, "unknown device"),
    ({"code": CODE, "sides": sides((OLD, "tpu"), (OLD, "cpu"))}, 503, "no tpu executor"),
    ({"code": CODE, "sides": [{"run": "not-a-run"}, {"runtime": OLD}]}, 400, "side A's 'run' names no run of yours"),
    ({"code": CODE, "sides": sides((None, "cpu"), (None, "cpu:cpu"))}, 400, "compare two runtimes or two devices"),
    ({"code": "print(1) # \ud800", "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "a lone surrogate"),
    ({"code": "print(1)\x00", "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "'code' holds a NUL"),
    ({"code": CODE, "title": "a\x00b", "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "'title' holds a NUL"),
    ({"code": CODE, "sides": sides((OLD, "cpu"), (None, "cpu")), "snippet": "nosuch"}, 400, "names no snippet"),
    ({"code": CODE, "sides": sides((OLD, "cpu"), (None, "cpu")), "snippet": 7}, 400, "a snippet's slug"),
    ({"code": 5, "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "'code' must be a string"),
    ({"code": "x" * 70_000, "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "the limit is"),
    ({"code": CODE, "title": "t" * 201, "sides": sides((OLD, "cpu"), (None, "cpu"))}, 400, "'title' is 201"),
    ([1, 2], 400, "JSON object"),
])
def test_what_cannot_be_compared_is_refused_and_nothing_is_left(executors_online, body, status, words):
    response = compare(body)
    assert response.status_code == status, response.content
    assert words in response.json()["error"]
    assert Run.objects.count() == 0 and Comparison.objects.count() == 0


def test_malformed_json_is_a_400():
    response = Client().post("/api/comparisons", b'{"code": "print(1)", "sides": [', content_type="application/json")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


def test_when_the_second_run_is_refused_neither_starts_and_the_first_share_is_given_back(executors_online,
                                                                                         settings):
    one_at_a_time = {"active": 1, "address_active": 1, "per_hour_s": 0, "per_day_s": 0, "queue_max": 0}
    settings.RUN_QUOTAS = {kind: one_at_a_time for kind in settings.RUN_DEVICE_KINDS}
    response = compare({"code": CODE, "sides": sides((OLD, "cpu"), (None, "cpu"))})
    assert response.status_code == 429, response.content
    assert "at most 1 at once" in response.json()["error"] and response.headers["Retry-After"]
    assert Run.objects.count() == 0 and Comparison.objects.count() == 0
    # The first side's slot was given back: one run is still admitted.
    run = Client(REMOTE_ADDR=ADDRESS).post("/api/runs", {"code": CODE}, content_type="application/json")
    assert run.status_code == 201, run.content


def saved_run(code: str, runtime: str) -> Run:
    run = Run.objects.create(code=code, device="cpu", runtime=runtime, status=ev.SUCCEEDED)
    run.events.create(seq=1, type="queued", data={"seq": 1, "type": "queued"})
    return run


def test_a_pinned_snippet_runs_on_the_newest_beside_its_saved_run(executors_online):
    run = saved_run(CODE, OLD)
    snippet = Snippet.objects.create(slug="pinnedold2345", content_hash="h" * 64, code=CODE, device="cpu",
                                     runtime=OLD, run=run)
    page = Client().get(f"/s/{snippet.slug}").content.decode()
    button = re.search(r'<button id="run-on-newest"[^>]*data-runtime="([^"]+)"', page)
    assert button and button.group(1) == runtimes.FIRST and "beside its saved output" in page

    response = compare({"code": CODE, "snippet": snippet.slug,
                        "sides": [{"run": str(run.id)}, {"runtime": runtimes.FIRST, "device": "cpu"}]})
    assert response.status_code == 201, response.content
    made = response.json()
    a, b = made["sides"]
    assert a["run"]["id"] == str(run.id) and a["runtime"] == OLD and a["run"]["status"] == "succeeded"
    assert b["runtime"] == runtimes.FIRST and Run.objects.count() == 2  # one new run only
    assert made["snippet"]["slug"] == snippet.slug
    assert f'href="/s/{snippet.slug}"' in Client().get(f"/compare/{made['slug']}").content.decode()

    # The snippet's code only: a comparison cannot claim to come from a snippet of other code.
    mine = {"code": "print('mine')\n", "snippet": snippet.slug, "sides": sides((OLD, "cpu"), (None, "cpu"))}
    response = compare(mine)
    assert response.status_code == 400 and "not the code of 'snippet'" in response.json()["error"]


def test_a_side_names_only_ones_own_run(django_user_model, executors_online):
    """A comparison keeps its runs for good: naming someone else's would keep it from them."""
    alice = django_user_model.objects.create_user("alice", "alice@example.com", "pw-alice-123")
    mallory = django_user_model.objects.create_user("mallory", "mallory@example.com", "pw-mallory-1")
    hers = saved_run(CODE, OLD)
    Run.objects.filter(pk=hers.pk).update(owner=alice)
    as_alice, as_mallory = Client(REMOTE_ADDR=ADDRESS), Client(REMOTE_ADDR="198.51.100.66")
    as_alice.force_login(alice)
    as_mallory.force_login(mallory)
    body = {"code": CODE, "sides": [{"run": str(hers.id)}, {"runtime": runtimes.FIRST}]}
    for stranger in (as_mallory, Client(REMOTE_ADDR="198.51.100.67")):
        refused = compare(body, stranger)
        assert refused.status_code == 400 and "no run of yours" in refused.json()["error"], refused.content
    assert Comparison.objects.count() == 0
    made = compare(body, as_alice)
    assert made.status_code == 201 and made.json()["sides"][0]["run"]["id"] == str(hers.id)
    # Her run of other code is not this code's side.
    other = saved_run("print('other')\n", OLD)
    Run.objects.filter(pk=other.pk).update(owner=alice)
    response = compare({"code": CODE, "sides": [{"run": str(other.id)}, {"runtime": runtimes.FIRST}]}, as_alice)
    assert response.status_code == 400 and "ran other code" in response.json()["error"]


def test_only_whoever_started_a_comparisons_runs_may_cancel_them(executors_online):
    made = compare({"code": CODE, "sides": sides((OLD, "cpu"), (None, "cpu"))}).json()
    a, b = (side["run"]["id"] for side in made["sides"])
    visitor = Client(REMOTE_ADDR="198.51.100.9").post(f"/api/runs/{a}/cancel")
    assert visitor.status_code == 403 and "a side of a comparison" in visitor.json()["error"]
    starter = Client(REMOTE_ADDR=ADDRESS).post(f"/api/runs/{b}/cancel")
    assert starter.status_code == 202, starter.content
    assert Run.objects.get(id=b).status == "cancelled"


def test_each_comparison_has_a_link_of_its_own(django_user_model, executors_online):
    alice = django_user_model.objects.create_user("alice", "alice@example.com", "pw-alice-123")
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(alice)
    a, b = saved_run(CODE, OLD), saved_run(CODE, runtimes.FIRST)
    Run.objects.filter(pk__in=[a.pk, b.pk]).update(owner=alice)
    body = {"code": CODE, "sides": [{"run": str(a.id)}, {"run": str(b.id)}]}
    slugs = {compare(body, client).json()["slug"] for _ in range(30)}
    assert len(slugs) == 30 and all(re.fullmatch(f"[{ALPHABET}]{{{LENGTH}}}", slug) for slug in slugs)


@pytest.mark.parametrize("path, body", [
    ("/api/runs", {"code": "print(1) # \udfff"}),
    ("/api/runs", {"code": "print(1)\x00"}),
    ("/api/snippets", {"code": "print(1)", "title": "\ud800"}),
    ("/api/snippets", {"code": "print(1)\x00"}),
])
def test_text_no_one_typed_is_a_400_not_a_500(executors_online, path, body):
    import json as json_module

    raw = json_module.dumps(body)  # \ud800 stays escaped in the JSON, as a client can send it
    response = Client(REMOTE_ADDR=ADDRESS).post(path, raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "lone surrogate" in response.json()["error"] or "NUL" in response.json()["error"]


def test_a_snippet_on_the_default_runtime_offers_no_newer_one():
    snippet = Snippet.objects.create(slug="pinnednew2345", content_hash="n" * 64, code=CODE, device="cpu")
    assert 'id="run-on-newest"' not in Client().get(f"/s/{snippet.slug}").content.decode()


def test_a_run_a_comparison_keeps_is_not_deleted_from_under_its_link(django_user_model, executors_online):
    from playground.actions.runs import check_delete_run
    from web.errors import ActionError

    alice = django_user_model.objects.create_user("alice", "alice@example.com", "pw-alice-123")
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(alice)
    made = compare({"code": CODE, "sides": sides((OLD, "cpu"), (None, "cpu"))}, client).json()
    run_id = made["sides"][0]["run"]["id"]
    Run.objects.filter(id=run_id).update(status=ev.SUCCEEDED)
    with pytest.raises(ActionError) as refused:
        check_delete_run(Run.objects.get(id=run_id))
    assert refused.value.status == 409 and f"/compare/{made['slug']}" in refused.value.message
    # My runs' Delete says so, and the run stays.
    page = client.post(f"/me/runs/{run_id}/delete/", follow=True).content.decode()
    assert f"/compare/{made['slug']} shows it" in page
    assert Run.objects.filter(id=run_id).exists()


@pytest.mark.parametrize("slug", ["nosuchslug234", "..%2F..%2Fetc", "a" * 40])
def test_an_unknown_comparison_is_a_404(slug):
    assert Client().get(f"/api/comparisons/{slug}").status_code == 404
    assert Client().get(f"/compare/{slug}").status_code == 404


def test_the_api_is_in_the_openapi_document():
    schema = Client().get("/api/openapi.json").json()
    assert "post" in schema["paths"]["/api/comparisons"] and "get" in schema["paths"]["/api/comparisons/{slug}"]
    request = schema["components"]["schemas"]["ComparisonRequest"]
    assert request["required"] == ["code", "sides"] and request["properties"]["sides"]["minItems"] == 2
