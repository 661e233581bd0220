"""The assistants' MCP endpoint through the real server, with the SDK's own client: daphne, real
workers and recorder, streamable HTTP without an Origin (as a script or an assistant's client
sends it). Each tool answers what the API and the page have of a run (the explained error and its
line, each compiled function's jaxpr and HLO, times, FLOPs, the run's link that answers), shares
and comparisons make links that open, the gallery's examples are resources, a token's account
owns what its calls make, and every refusal is a tool error in the API's words.

The limits are tried on a stack of this file's own (its own Redis server, so that it neither
flushes nor shares another stack's database): one run at once and four a minute per address,
behind one trusted proxy so that each test is a client of its own (X-Forwarded-For), and the
editor's analyser running for ``complete``."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
import urllib.error
import urllib.request

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.stack import RedisServer, Stack
from executor import events as ev
from tests.conftest import POSING, stack_env

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {"run_jax", "explain_error", "share", "compare", "list_runtimes", "list_devices", "complete"}

JITTED = """\
import jax
import jax.numpy as jnp

@jax.jit
def step(x, w):
    return jnp.tanh(x @ w).sum()

x = jnp.ones((64, 64))
print("value", float(step(x, x)))
%timeit -n 3 -r 3 step(x, x).block_until_ready()
"""

FAILING = """\
import jax
import jax.numpy as jnp

@jax.jit
def relu(x):
    if x > 0:
        return x
    return 0.0

print(relu(jnp.float32(2.0)))
"""


def call(stack: Stack, work, *, client: str | None = None, token: str | None = None,
         language: str | None = None):
    """``await work(session)`` in a session of the SDK's client over streamable HTTP to the
    stack's /mcp, from ``client``'s address (X-Forwarded-For), with ``token``, asking for
    ``language`` when given; no Origin, as scripts send none."""
    headers = {**({"X-Forwarded-For": client} if client else {}),
               **({"Authorization": f"Bearer {token}"} if token else {}),
               **({"Accept-Language": language} if language else {})}

    async def main():
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=180)) as http:
            async with streamable_http_client(stack.url + "/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await work(session)

    return asyncio.run(main())


def tool(stack: Stack, name: str, arguments: dict | None = None, **how):
    """A tool's result: (is_error, its structured content, its content blocks)."""
    async def work(session):
        return await session.call_tool(name, arguments or {})

    result = call(stack, work, **how)
    return result.is_error, result.structured_content, result.content


def ok(stack: Stack, name: str, arguments: dict | None = None, **how) -> dict:
    is_error, found, content = tool(stack, name, arguments, **how)
    assert not is_error, content
    assert json.loads(content[0].text) == found  # the same answer for clients that read text only
    return found


def path_of(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def test_tools_are_listed_with_schemas_and_descriptions(live_stack):
    async def work(session):
        return (await session.list_tools()).tools

    tools = {t.name: t for t in call(live_stack, work)}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert len(t.description) > 100, t.name
        for name, schema in t.input_schema["properties"].items():
            assert schema.get("description"), (t.name, name)
    run = tools["run_jax"].input_schema
    assert run["required"] == ["code"]
    assert set(run["properties"]) == {"code", "runtime", "device", "stdin", "profile", "include_hlo"}
    assert run["properties"]["code"]["type"] == "string" and run["properties"]["profile"]["type"] == "boolean"
    assert set(tools["complete"].input_schema["required"]) == {"code", "line", "column"}
    assert set(tools["compare"].input_schema["required"]) == {"code", "sides"}
    assert tools["list_devices"].annotations.read_only_hint and not tools["run_jax"].annotations.read_only_hint


def test_run_jax_answers_the_jaxpr_times_flops_and_a_link_that_answers(live_stack):
    live_stack.wait_online("cpu")
    run = ok(live_stack, "run_jax", {"code": JITTED})
    assert run["status"] == ev.SUCCEEDED and run["finished"], run
    assert run["stdout"].startswith("value 4096.0\n"), run["stdout"]
    assert "stdout_cut_at" not in run and run["error"] is None
    [step] = [f for f in run["functions"] if f["name"] == "step"]
    assert step["jaxpr"].startswith("{ lambda") and "tanh" in step["jaxpr"]
    assert step["compile_ms"] > 0 and step["flops"] > 2 * 64**3 * 0.9 and step["bytes_accessed"] > 0
    assert "hlo" not in step and "stablehlo" not in step
    [timeit] = run["timings"]
    assert timeit["kind"] == "timeit" and timeit["median_ms"] > 0
    assert run["ran_on"]["jax_version"] and run["ran_on"]["platform"] == "cpu"
    assert run["usage"]["wall_ms"] > 0
    assert run["links"]["page"] is None
    detail = live_stack.get(path_of(run["links"]["api"]))  # the link answers: the API's run
    assert detail["id"] == run["run"] and detail["code"] == JITTED


def test_include_hlo_adds_each_functions_stablehlo_and_hlo(live_stack):
    run = ok(live_stack, "run_jax", {"code": JITTED, "include_hlo": True})
    [step] = [f for f in run["functions"] if f["name"] == "step"]
    assert "stablehlo.tanh" in step["stablehlo"] and step["hlo"].startswith("HloModule")


def test_a_profiled_run_answers_its_profile_and_a_figure_comes_as_an_image(live_stack):
    code = JITTED + "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n"
    is_error, run, content = tool(live_stack, "run_jax", {"code": code, "profile": True})
    assert not is_error and run["status"] == ev.SUCCEEDED, content
    profile = run["profile"]
    assert not profile.get("error") and profile["summary"]
    assert profile["url"] == f"{live_stack.url}/api/runs/{run['run']}/profile"
    status, _headers, _body = live_stack.profile(path_of(profile["url"]))
    assert status == 200
    [image] = [block for block in content if block.type == "image"]
    assert image.mime_type == "image/png" and base64.b64decode(image.data).startswith(b"\x89PNG")
    assert [d["mime"] for d in run["displays"]] == ["image/png"] and "data" not in run["displays"][0]


def test_a_failing_snippet_answers_the_explained_error_and_its_line(live_stack):
    run = ok(live_stack, "run_jax", {"code": FAILING})
    assert run["status"] == ev.FAILED
    error = run["error"]
    assert error["exc_type"].endswith("TracerBoolConversionError") and error["line"] == 6, error
    assert "jnp.where" in error["explanation"] and error["traceback"]


def test_run_jax_reads_its_stdin_and_running_past_it_is_explained(live_stack):
    code = "import sys\nfirst = input()\nprint(int(first) + int(input()))\nprint(repr(sys.stdin.read()))\n"
    run = ok(live_stack, "run_jax", {"code": code, "stdin": "3\n4\nrest 你好"})
    assert run["status"] == ev.SUCCEEDED, run
    assert run["stdout"] == "7\n'rest 你好'\n"
    past = ok(live_stack, "explain_error", {"code": "input()\ninput()\n", "stdin": "only one line\n"})
    assert past["error"]["exc_type"] == "EOFError" and past["error"]["line"] == 2, past


def test_explain_error_answers_only_what_went_wrong(live_stack):
    found = ok(live_stack, "explain_error", {"code": FAILING})
    assert found["status"] == ev.FAILED and found["error"]["line"] == 6
    assert "jnp.where" in found["error"]["explanation"]
    assert found["summary"].startswith(f"{found['error']['exc_type']} at line 6: ")
    assert "functions" not in found and "stdout" not in found
    fine = ok(live_stack, "explain_error", {"code": "print(1 + 1)"})
    assert fine["status"] == ev.SUCCEEDED and fine["error"] is None and fine["summary"] == "the code ran without error"


def test_share_returns_a_permanent_link_that_opens_with_the_code(live_stack):
    code = "import jax.numpy as jnp\nprint('shared from an assistant', jnp.arange(3).sum())\n"
    run = ok(live_stack, "run_jax", {"code": code})
    shared = ok(live_stack, "share", {"code": code, "title": "From an assistant", "run": run["run"]})
    assert shared["created"] and shared["run"] == run["run"] and shared["jax_version"]
    with urllib.request.urlopen(shared["url"], timeout=10) as page:
        assert page.status == 200 and "shared from an assistant" in page.read().decode()
    assert live_stack.fetch_text(path_of(shared["links"]["py"])) == code
    assert ok(live_stack, "share", {"code": code, "title": "From an assistant", "run": run["run"]})["slug"] == \
        shared["slug"]  # the same content, the same link


def test_lists_answer_as_the_api_does(live_stack):
    runtimes = ok(live_stack, "list_runtimes")
    assert runtimes == live_stack.get("/api/runtimes")
    devices = ok(live_stack, "list_devices")
    assert [d["kind"] for d in devices["devices"]] == [d["kind"] for d in live_stack.get("/api/devices")["devices"]]
    assert next(d for d in devices["devices"] if d["kind"] == "cpu")["online"]


def test_the_gallerys_examples_are_resources(live_stack):
    from playground.gallery import examples

    async def work(session):
        listed = (await session.list_resources()).resources
        return listed, await session.read_resource(listed[0].uri)

    listed, read = call(live_stack, work)
    assert [str(r.uri) for r in listed] == [f"jax-playground://examples/{e['slug']}" for e in examples()]
    assert all(r.mime_type == "text/x-python" and r.description for r in listed)
    assert listed[0].title == examples()[0]["title"]
    assert read.contents[0].text == examples()[0]["code"]


def test_a_tokens_account_owns_what_its_calls_make(live_stack):
    from django.contrib.auth import get_user_model

    from accounts.actions import do_create_token
    from playground.models import Run

    user = get_user_model().objects.create_user("assistant-owner", password="a long password 1")
    _token, secret = do_create_token(user, "assistant")
    code = "print('mine')\n"
    run = ok(live_stack, "run_jax", {"code": code}, token=secret)
    assert Run.objects.get(id=run["run"]).owner == user
    shared = ok(live_stack, "share", {"code": code, "run": run["run"]}, token=secret)
    assert live_stack.get(f"/api/snippets/{shared['slug']}")["owner"] == "assistant-owner"
    request = urllib.request.Request(live_stack.url + "/api/me/snippets", headers={"Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request, timeout=10) as mine:
        assert [s["slug"] for s in json.load(mine)["snippets"]] == [shared["slug"]]
    # A token that is not valid is refused in the API's words, and the server stays up.
    is_error, found, _content = tool(live_stack, "run_jax", {"code": code}, token="jpg_" + "x" * 43)
    assert is_error and found["status"] == 401 and found["error"].startswith("the API token is not valid")
    assert ok(live_stack, "list_runtimes")["default"]


def test_refusals_are_tool_errors_in_the_apis_words(live_stack):
    from django.conf import settings

    big = "x = 1\n" * (settings.RUN_MAX_CODE_BYTES // 6 + 1)
    for arguments in ({"code": big}, {"code": "print(1)", "device": "quantum"},
                      {"code": "print(1)", "runtime": "jax-0.0.1"}, {"code": "print('\\x00')\x00"}):
        is_error, found, content = tool(live_stack, "run_jax", arguments)
        status, api = live_stack.post("/api/runs", arguments)
        assert is_error and status == 400 and found == {"error": api["error"], "status": 400}, (found, api)
        assert content[0].text == api["error"]
    is_error, found, _ = tool(live_stack, "compare", {"code": "print(1)", "sides": [{"device": "cpu"}]})
    status, api = live_stack.post("/api/comparisons", {"code": "print(1)", "sides": [{"device": "cpu"}]})
    assert is_error and status == 400 and found["error"] == api["error"]
    # The API's words in the caller's language, English unless it asks for another.
    is_error, found, _ = tool(live_stack, "run_jax", {"code": "print(1)", "device": "quantum"}, language="zh-CN")
    assert is_error and "quantum" in found["error"] and "unknown device" not in found["error"]
    # A malformed call (no code) is a tool error too, not a broken session.
    is_error, _found, content = tool(live_stack, "run_jax", {"device": "cpu"})
    assert is_error and "code" in content[0].text


def test_compare_runs_both_sides_and_the_link_answers(live_stack, posing_gpu_worker):
    found = ok(live_stack, "compare", {"code": JITTED, "sides": [{"device": "cpu"}, {"device": POSING}]})
    assert [s["name"] for s in found["sides"]] == ["A", "B"]
    for side, device in zip(found["sides"], ("cpu", POSING)):
        assert side["status"] == ev.SUCCEEDED and side["device"] == device, side
        assert side["stdout"].startswith("value 4096.0\n") and side["label"].startswith("JAX ")
        [step] = [f for f in side["functions"] if f["name"] == "step"]
        assert step["compile_ms"] > 0 and step["flops"] > 0 and "jaxpr" not in step
    slug = found["slug"]
    assert found["url"].endswith(f"/compare/{slug}")
    with urllib.request.urlopen(found["url"], timeout=10) as page:
        assert page.status == 200
    assert [s["run"]["id"] for s in live_stack.get(f"/api/comparisons/{slug}")["sides"]] == \
        [s["run"] for s in found["sides"]]


def test_a_plain_post_without_a_session_or_origin_is_answered(live_stack):
    """Stateless: a request stands alone, no initialize and no session id before it."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    request = urllib.request.Request(live_stack.url + "/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200 and "mcp-session-id" not in {k.lower() for k in answer.headers}
        assert {t["name"] for t in json.load(answer)["result"]["tools"]} == TOOLS
    # A page of another site may not call it; there is no stream to open nor session to end.
    elsewhere = urllib.request.Request(request.full_url, data=body, method="POST",
                                       headers={**request.headers, "Origin": "https://elsewhere.example"})
    for refused, status in ((elsewhere, 403), (urllib.request.Request(request.full_url, method="GET", headers={
            "Accept": "text/event-stream"}), 405), (urllib.request.Request(request.full_url, method="DELETE"), 405)):
        with pytest.raises(urllib.error.HTTPError) as answered:
            urllib.request.urlopen(refused, timeout=10)
        assert answered.value.code == status


def test_the_sdks_client_of_the_newest_protocol_is_answered_too(live_stack):
    from mcp import Client

    async def main():
        async with Client(live_stack.url + "/mcp") as client:
            tools = await client.list_tools()
            result = await client.call_tool("run_jax", {"code": "print(6 * 7)"})
            return tools, result

    tools, result = asyncio.run(main())
    assert {t.name for t in tools.tools} == TOOLS
    assert not result.is_error and result.structured_content["stdout"] == "42\n"


# Limits, on a stack of this file's own -----------------------------------------------------------

@pytest.fixture(scope="module")
def limits_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("mcp-redis"))
    server.start()
    env = stack_env(server.url, TRUSTED_PROXIES="1", RUN_MAX_ACTIVE_PER_CLIENT="1", RUN_MAX_ACTIVE_PER_ADDRESS="1",
                    RUN_RATE_LIMIT_PER_MINUTE="4", ANALYSER_PROCESSES="1", ANALYSE_RATE_LIMIT_PER_MINUTE="0",
                    ANALYSE_TIMEOUT_S="6", EXECUTOR_POOL_SIZE="1", EXECUTOR_CONCURRENCY="1")
    stack = Stack.launch(env, tmp_path_factory.mktemp("mcp-stack-logs"))
    try:
        yield stack
    finally:
        stack.stop()
        server.stop()


def released(stack: Stack, run_id: str, timeout: float = 60) -> None:
    """Until the run's end has given its slot back."""
    import redis

    from playground.quotas import _client_of

    client = redis.Redis.from_url(stack.env["REDIS_URL"])
    deadline = time.monotonic() + timeout
    while client.exists(_client_of(run_id)):
        assert time.monotonic() < deadline, f"run {run_id}'s share was not given back"
        time.sleep(0.05)


def without_retry(message: str) -> str:
    """A 429's words without its "try again in N s", which moves with the clock."""
    return re.sub(r"try again in \d+ s", "try again in N s", message)


def test_more_runs_at_once_than_the_share_allows_is_the_apis_429(limits_stack):
    client = "203.0.113.21"
    status, held, _ = limits_stack.post_as(client, "/api/runs", {"code": "import time\ntime.sleep(8)\n"})
    assert status == 201, held
    is_error, found, _ = tool(limits_stack, "run_jax", {"code": "print(1)"}, client=client)
    status, api, headers = limits_stack.post_as(client, "/api/runs", {"code": "print(1)"})
    assert is_error and status == 429 and found["status"] == 429 and found["limit"] == api["limit"] == "active_runs"
    assert without_retry(found["error"]) == without_retry(api["error"])
    assert "everyone at your address" in found["error"]
    # Another client is still admitted.
    assert ok(limits_stack, "run_jax", {"code": "print(2)"}, client="203.0.113.22")["stdout"] == "2\n"
    released(limits_stack, held["id"])


def test_a_script_that_starts_its_next_run_as_it_reads_the_end_is_never_refused(limits_stack):
    """One run at a time is this address's share: each next run, POSTed the moment the last one's
    finished reaches the script's socket, is admitted (the share is given back before that
    finished is logged, not after)."""
    client = "203.0.113.41"
    for i in range(3):  # within the 4 a minute
        status, run, _ = limits_stack.post_as(client, "/api/runs", {"code": f"print({i})"})
        assert status == 201, (i, run)
        watched = limits_stack.watch(run["id"], client=client, timeout=60)
        assert watched.finished["status"] == "succeeded" and watched.text() == f"{i}\n"


def test_more_runs_a_minute_than_the_share_allows_is_the_apis_429(limits_stack):
    client = "203.0.113.31"
    if time.time() % 60 > 30:  # the window is the clock's minute: all of it within one
        time.sleep(61 - time.time() % 60)
    for _ in range(4):
        status, run, _ = limits_stack.post_as(client, "/api/runs", {"code": "print(1)"})
        assert status == 201, run
        released(limits_stack, run["id"])
    is_error, found, _ = tool(limits_stack, "run_jax", {"code": "print(1)"}, client=client)
    status, api, _ = limits_stack.post_as(client, "/api/runs", {"code": "print(1)"})
    assert is_error and status == 429 and found["limit"] == api["limit"] == "rate"
    assert without_retry(found["error"]) == without_retry(api["error"]) and "a minute" in found["error"]


def test_complete_lists_the_analysers_completions(limits_stack):
    code = "import jax.numpy as jnp\njnp.si"
    deadline = time.monotonic() + 300
    while True:  # the analyser imports jax before it answers its first request
        is_error, found, content = tool(limits_stack, "complete", {"code": code, "line": 2, "column": 7},
                                        client="203.0.113.41")
        if not is_error:
            break
        assert found["status"] == 503 and time.monotonic() < deadline, content
        time.sleep(1)
    assert "sin" in [item["label"] for item in found["items"]]
    is_error, found, _ = tool(limits_stack, "complete", {"code": code, "line": 0, "column": 1})
    status, api = limits_stack.post("/api/analyse", {"op": "complete", "code": code, "line": 0, "column": 1})
    assert is_error and status == 400 and found["error"] == api["error"]
