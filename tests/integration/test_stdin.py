"""A run's standard input through the real stack, as a script sends it (daphne, plain websockets, no
Origin): the snippet's sys.stdin is exactly the bytes it was given, then its end; input() past the
end is explained; the POST, the run socket's start, a snippet and a comparison all take it, a
snippet keeps it (and its content hash with it) and its Run reads it again byte for byte."""

from __future__ import annotations

import json
import re

import pytest

from executor.runner import explain
from playground.actions.runs import RUN_MAX_STDIN_BYTES
from tests.conftest import POSING

pytestmark = pytest.mark.django_db(transaction=True)

SUM = "print(int(input()) + int(input()))\n"
# Each line read by input() until its end, echoed; then EOFError.
ECHO = "while True:\n    print('got', input())\n"
# What sys.stdin gave, as bytes (hex) and as text (ascii() shows every odd character).
EXACT = "import sys\nraw = sys.stdin.buffer.read()\nprint(raw.hex())\nprint(ascii(raw.decode('utf-8')))\n"
# CRLF kept, a tab, Chinese, an emoji (four bytes of UTF-8) and no newline at the end.
ODD = "first line\r\nsecond\tline\r\n\u4e2d\u6587\u8f93\u5165\n\U0001f600 last, no newline"


@pytest.fixture(autouse=True)
def _clean_rate_limits(redis_client):
    for key in redis_client.scan_iter("ratelimit:*"):
        redis_client.delete(key)


def run(live_stack, code: str, **body) -> tuple[dict, object]:
    """POST /api/runs, then the run followed to its end on its socket: (the POST's answer, what
    the socket delivered)."""
    status, created = live_stack.post("/api/runs", {"code": code, **body})
    assert status == 201, created
    watched = live_stack.watch(created["id"])
    assert watched.finished is not None, watched.events
    return created, watched


def test_input_reads_the_lines_it_was_given(live_stack):
    created, watched = run(live_stack, SUM, stdin="3\n4\n")
    assert watched.text() == "7\n"
    assert watched.finished["status"] == "succeeded", watched.events
    assert live_stack.wait_finished(created["id"])["stdin"] == "3\n4\n"


def test_sys_stdin_is_exactly_the_bytes_sent(live_stack):
    _, watched = run(live_stack, EXACT, stdin=ODD)
    hex_line, text_line = watched.text().splitlines()
    assert bytes.fromhex(hex_line) == ODD.encode("utf-8")
    assert text_line == ascii(ODD)


def test_a_run_without_input_reads_its_end_at_once(live_stack):
    _, watched = run(live_stack, "import sys\nprint(repr(sys.stdin.read()), repr(sys.stdin.buffer.read()))\n")
    assert watched.text() == "'' b''\n"
    _, watched = run(live_stack, "import sys\nprint(repr(sys.stdin.read()))\n", stdin="")
    assert watched.text() == "''\n"


def test_input_past_the_end_fails_and_says_how_many_lines_there_were(live_stack):
    _, watched = run(live_stack, ECHO, stdin="one\ntwo")
    assert watched.text() == "got one\ngot two\n"
    assert watched.finished["status"] == "failed"
    error = next(e for e in watched.events if e["type"] == "error")
    assert error["exc_type"] == "EOFError" and error["line"] == 2
    assert error["explanation_template"] == explain.INPUT_RAN_OUT and error["explanation_args"] == {"lines": "2"}
    assert error["explanation"].startswith("input() found no more input: the run's input had 2 lines, and all")

    _, watched = run(live_stack, ECHO, stdin="only\n")
    error = next(e for e in watched.events if e["type"] == "error")
    assert error["explanation_template"] == explain.INPUT_RAN_OUT_ONE and error["explanation_args"] == {}

    # No input at all: the sentence of before, which says a run has none.
    _, watched = run(live_stack, ECHO)
    error = next(e for e in watched.events if e["type"] == "error")
    assert error["explanation_template"] == explain.NO_INPUT


def test_the_largest_input_is_read_whole_and_one_byte_more_is_refused(live_stack):
    largest = "\u4e2d" * ((RUN_MAX_STDIN_BYTES - 1) // 3) + "\n" * ((RUN_MAX_STDIN_BYTES - 1) % 3 + 1)
    assert len(largest.encode()) == RUN_MAX_STDIN_BYTES
    counts = "import sys\nraw = sys.stdin.buffer.read()\nprint(len(raw), raw.count('中'.encode()))\n"
    _, watched = run(live_stack, counts, stdin=largest)
    assert watched.text() == f"{RUN_MAX_STDIN_BYTES} {(RUN_MAX_STDIN_BYTES - 1) // 3}\n"

    status, refused = live_stack.post("/api/runs", {"code": SUM, "stdin": largest + "x"})
    assert status == 400, refused
    assert refused["error"] == (f"the input is {RUN_MAX_STDIN_BYTES + 1} bytes; the limit is {RUN_MAX_STDIN_BYTES} "
                                f"bytes ({RUN_MAX_STDIN_BYTES // 1024} KiB)")


@pytest.mark.parametrize(("stdin", "error"), [
    ("a\nb\x00c", "'stdin' holds a NUL character (at character 3)"),
    ("ok \ud800", "'stdin' is not valid Unicode text (a lone surrogate at character 3)"),
    (["3\n"], "'stdin' must be a string"),
])
def test_input_that_is_not_plain_text_is_refused(live_stack, stdin, error):
    """JSON can carry a NUL and a lone surrogate (\\u0000, \\ud800); neither is text a person
    types, and PostgreSQL stores no NUL: refused as they are in code."""
    status, refused = live_stack.post("/api/runs", {"code": SUM, "stdin": stdin})
    assert (status, refused["error"]) == (400, error)


def test_the_run_socket_s_start_takes_it_too(live_stack):
    reply, watched = live_stack.start_on_socket({"code": SUM, "stdin": "30\n12\n"})
    assert reply["type"] == "started_run", reply
    assert watched.text() == "42\n" and watched.finished["status"] == "succeeded"

    reply, watched = live_stack.start_on_socket({"code": SUM, "stdin": "x" * (RUN_MAX_STDIN_BYTES + 1)})
    assert watched is None
    assert (reply["type"], reply["status"]) == ("refused", 400)
    assert reply["error"].startswith(f"the input is {RUN_MAX_STDIN_BYTES + 1} bytes; the limit is")


def test_a_snippet_keeps_its_input_and_its_run_reads_it_again(live_stack):
    status, shared = live_stack.post("/api/snippets", {"code": EXACT, "stdin": ODD, "title": "exact input"})
    assert status == 201, shared
    snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
    assert snippet["stdin"] == ODD and snippet["run"] is None

    # Its page's Run: its code, its input and its slug; the sharer's first run becomes its output.
    created, watched = run(live_stack, snippet["code"], stdin=snippet["stdin"], snippet=shared["slug"])
    printed = watched.text()
    assert bytes.fromhex(printed.splitlines()[0]) == ODD.encode("utf-8")
    live_stack.wait_finished(created["id"])
    snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
    assert snippet["run"]["id"] == created["id"] and snippet["run"]["stdin"] == ODD
    assert "".join(e["text"] for e in snippet["run"]["events"] if e["type"] == "stdout") == printed

    # Its page has it, for the Input box; a rerun prints the same.
    page = live_stack.fetch_text(f"/s/{shared['slug']}")
    data = json.loads(re.search(r'id="snippet-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert data["stdin"] == ODD
    _, again = run(live_stack, data["code"], stdin=data["stdin"], snippet=shared["slug"])
    assert again.text() == printed


def test_the_same_code_with_another_input_is_another_link(live_stack):
    slugs = {}
    for name, body in {"none": {}, "empty": {"stdin": ""}, "a": {"stdin": "1\n"}, "b": {"stdin": "2\n"},
                       "a again": {"stdin": "1\n"}, "crlf": {"stdin": "1\r\n"}}.items():
        status, shared = live_stack.post("/api/snippets", {"code": SUM, **body})
        assert status in (200, 201), shared
        slugs[name] = shared["slug"]
    assert slugs["none"] == slugs["empty"] and slugs["a"] == slugs["a again"]
    assert len({slugs["none"], slugs["a"], slugs["b"], slugs["crlf"]}) == 4

    # A run of other input is not kept as the snippet's output.
    created, _ = run(live_stack, SUM, stdin="5\n6\n")
    live_stack.wait_finished(created["id"])
    status, shared = live_stack.post("/api/snippets", {"code": SUM, "stdin": "7\n8\n", "run": created["id"]})
    assert status == 201 and shared["run"] is None, shared
    status, shared = live_stack.post("/api/snippets", {"code": SUM, "stdin": "5\n6\n", "run": created["id"]})
    assert status == 201 and shared["run"] == created["id"], shared


def test_a_comparison_s_sides_read_the_input(live_stack, posing_gpu_worker):
    code = "import sys\nprint(sys.stdin.read().split())\n"
    status, shared = live_stack.post("/api/snippets", {"code": code, "stdin": "from the snippet\n"})
    assert status == 201, shared
    saved, _ = run(live_stack, code, stdin="from the snippet\n", snippet=shared["slug"])
    live_stack.wait_finished(saved["id"])

    # "Run on the newest" from the snippet's page: its saved run, and a new run of its input.
    status, made = live_stack.post("/api/comparisons", {
        "code": code, "snippet": shared["slug"], "sides": [{"run": saved["id"]}, {"device": POSING}]})
    assert status == 201, made
    assert live_stack.watch(made["sides"][1]["run"]["id"]).text() == "['from', 'the', 'snippet']\n"
    assert [side["stdin"] for side in made["sides"]] == ["from the snippet\n"] * 2
    # A run that read another input than the comparison's is not one of its sides.
    status, refused = live_stack.post("/api/comparisons", {
        "code": code, "snippet": shared["slug"], "stdin": "other",
        "sides": [{"run": saved["id"]}, {"device": POSING}]})
    assert (status, refused["error"]) == (400, "side A's run read another input than 'stdin'")

    # The request's input is both sides', unless a side has its own.
    status, made = live_stack.post("/api/comparisons", {
        "code": code, "stdin": "both", "sides": [{"device": "cpu"}, {"device": POSING, "stdin": "B's own"}]})
    assert status == 201, made
    printed = [live_stack.watch(side["run"]["id"]).text() for side in made["sides"]]
    assert printed == ["['both']\n", "[\"B's\", 'own']\n"]
    assert live_stack.get(f"/api/comparisons/{made['slug']}")["sides"][1]["stdin"] == "B's own"


def test_the_openapi_document_describes_it(live_stack):
    doc = live_stack.get("/api/openapi.json")
    schemas = doc["components"]["schemas"]
    stdin = schemas["RunRequest"]["properties"]["stdin"]
    assert stdin["type"] == "string" and stdin["maxLength"] == RUN_MAX_STDIN_BYTES
    for request in ("SnippetRequest", "ComparisonRequest"):
        assert schemas[request]["properties"]["stdin"]["maxLength"] == RUN_MAX_STDIN_BYTES
    new_side = schemas["ComparisonRequest"]["properties"]["sides"]["items"]["oneOf"][0]
    assert "stdin" in new_side["properties"]
    assert "stdin" in schemas["RunDetail"]["allOf"][1]["properties"]
    assert "stdin" in schemas["Snippet"]["allOf"][1]["properties"]
