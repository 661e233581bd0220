"""The one definition of the run protocol: what it keeps, repairs and drops, its TypeScript twin,
and the framing of large events into websocket messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor import events as ev
from executor.runner import protocol
from executor.runner.protocol import Problems, clean_json, rebuild

ROOT = Path(__file__).resolve().parents[2]


def test_the_typescript_types_are_generated_from_the_python():
    generated = (ROOT / "frontend" / "src" / "protocol.gen.ts").read_text()
    assert generated == protocol.typescript(), (
        "frontend/src/protocol.gen.ts is stale: run "
        "`.venv/bin/python -m executor.runner.protocol > frontend/src/protocol.gen.ts`")


def test_every_event_type_is_declared_once_and_shared():
    assert ev.EVENT_TYPES == tuple(protocol.EVENTS)
    assert protocol.RUNNER_EVENT_TYPES == {"compiling", "compiled", "timing", "display", "error", "shapes"}
    assert "finished" not in protocol.RUNNER_EVENT_TYPES and "started" not in protocol.RUNNER_EVENT_TYPES


def test_a_clean_event_passes_unchanged():
    problems = Problems()
    fields = {"kind": "timeit", "label": "f(x)", "mean_ms": 1.5, "repeats": 7, "notes": ["a"], "rows": [{"x": 1}]}
    assert rebuild("timing", fields, problems) == fields
    assert not problems


@pytest.mark.parametrize("value, shown", [(float("nan"), "NaN"), (float("inf"), "Infinity"),
                                          (float("-inf"), "-Infinity")])
def test_non_finite_numbers_become_null_with_a_note(value, shown):
    problems = Problems()
    out = rebuild("timing", {"label": "t", "mean_ms": value, "rows": [{"speedup": value}]}, problems)
    assert out == {"label": "t", "mean_ms": None, "rows": [{"speedup": None}]}
    assert any(f"{shown} is not a JSON number" in p for p in problems.seen)
    json.dumps(out, allow_nan=False)  # storable


def test_nul_and_lone_surrogates_become_text_every_consumer_accepts():
    problems = Problems()
    out = rebuild("error", {"exc_type": "E\x00", "message": "a\ud800b", "traceback": "\\u0000"}, problems)
    assert out["exc_type"] == "E\u2400"
    assert out["message"] == "a\ufffd\ufffd\ufffdb"
    assert out["traceback"] == "\\u0000"  # the six characters a snippet printed, untouched
    out["message"].encode("utf-8")


def test_unknown_fields_types_and_wrong_kinds_are_dropped_with_a_note():
    problems = Problems()
    assert rebuild("no-such", {"x": 1}, problems) is None
    out = rebuild("display", {"text": "ok", "bogus": 1, "width": "wide", "devices": ["cpu:0", 1]}, problems)
    assert out == {"text": "ok"}
    said = " ".join(problems.seen)
    assert "unknown type 'no-such'" in said and "unknown field 'bogus'" in said
    assert "display.width: expected int" in said and "display.devices: expected str[]" in said


def test_a_missing_required_field_drops_the_event():
    problems = Problems()
    assert rebuild("error", {"message": "no type"}, problems) is None
    assert "required field 'exc_type'" in problems.seen[0]


def test_nesting_past_the_limit_is_cut():
    deep: list = []
    node = deep
    for _ in range(50):
        node.append([])
        node = node[0]
    problems = Problems()
    out = clean_json({"a": deep}, problems, "x")
    depth, node = 0, out["a"]
    while isinstance(node, list) and node:
        depth, node = depth + 1, node[0]
    assert depth < protocol.MAX_DEPTH
    assert "nested deeper" in problems.seen[0]


def test_ints_accept_integral_floats():
    out = rebuild("display", {"width": 640.0, "height": 480}, Problems())
    assert out == {"width": 640, "height": 480} and isinstance(out["width"], int)


def test_finished_is_built_in_one_place():
    fields = protocol.finished_fields("lost", "gone")
    assert fields["status"] == "lost" and fields["truncated"] is False
    assert set(fields) == set(protocol.EVENTS["finished"].fields)
    with pytest.raises(ValueError):
        protocol.finished_fields("running")


def test_a_runner_request_is_one_checked_json_line():
    line = protocol.request("run", code="print(1) # \ud800", options={"capture": False}, graded=True, wall_s=30.0)
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and line.isascii()
    assert json.loads(line) == {"op": "run", "code": "print(1) # \ud800", "options": {"capture": False},
                                "graded": True, "wall_s": 30.0}
    assert json.loads(protocol.request("warm")) == {"op": "warm"}
    assert json.loads(protocol.request("analyse")) == {"op": "analyse"}


@pytest.mark.parametrize("op, fields, said", [
    ("snippet", {"code": "x", "wall_s": 1.0}, "a runner is not asked 'snippet'"),
    ("run", {"code": "x", "wall_s": 1.0, "checks": "check('a', True)"}, "has no field 'checks'"),
    ("run", {"code": "x"}, "needs 'wall_s'"),
    ("check", {"checks": None, "wall_s": 1.0}, "needs 'checks'"),
    ("compile", {"modules": "not a list", "wall_s": 1.0}, "'modules' must be list"),
    ("run", {"code": "x", "wall_s": 1.0, "graded": 1}, "'graded' must be bool"),
    ("warm", {"wall_s": 1.0}, "has no field 'wall_s'"),
])
def test_a_request_the_table_does_not_declare_is_refused_before_it_reaches_a_runner(op, fields, said):
    with pytest.raises(ValueError, match=said):
        protocol.request(op, **fields)


def test_every_request_but_warm_is_a_role_of_the_runner():
    from executor.runner import main

    # "cell" lines come only after a "session" request: the session's role reads them.
    assert set(main.ROLES) == set(protocol.RUNNER_REQUESTS) - {"warm", "cell"}


def test_a_runner_checks_itself_against_what_it_may_send():
    assert protocol.undeclared("compiled", {"name": "f", "flops": 3, "seq": 1}) == []
    assert protocol.undeclared("ready", {"platform": "cpu", "forked": True, "lean": False, "huge_bytes": 0}) == []
    assert protocol.undeclared("answer", {"id": None, "value": {"$f": "nan"}}) == []  # a receiver's to repair
    assert protocol.undeclared("finished", {"status": "succeeded"}) == ["a message of undeclared type 'finished'"]
    assert protocol.undeclared("display", {"text": "x", "bogus": 1, "width": "wide"}) == [
        "display: undeclared field 'bogus'", "display.width: a str, declared int"]


def test_encode_never_writes_invalid_json():
    body = ev.encode({"type": "stdout", "text": "\x00 \ud800", "seq": 0, "x": float("nan")})
    data = json.loads(body)
    assert data == {"seq": 0, "type": "stdout", "text": "\u2400 \ufffd\ufffd\ufffd", "x": None}
    assert body.startswith('{"seq":0,')  # the placeholder the log's append fills in


class TestWebsocketParts:
    def split(self, event: dict, limit: int) -> list[str]:
        from playground.streams import encode_messages

        return encode_messages(protocol.dumps(event), limit)

    def test_a_small_event_is_one_message(self):
        assert self.split({"seq": 3, "type": "stdout", "text": "hi"}, 1024) == ['{"seq":3,"type":"stdout","text":"hi"}']

    @pytest.mark.parametrize("text", ["y" * 100_000, '"\\' * 40_000, "é☃𝄞" * 30_000],
                             ids=["ascii", "quotes-and-backslashes", "multibyte"])
    def test_a_large_event_is_sent_in_parts_that_join_to_it(self, text):
        event = {"seq": 9, "type": "display", "text": text}
        messages = self.split(event, 16 * 1024)
        assert len(messages) > 1
        parts = [json.loads(m) for m in messages]
        assert all(len(m.encode()) <= 16 * 1024 for m in messages)
        assert [p["part"] for p in parts] == list(range(1, len(parts) + 1))
        assert {(p["seq"], p["type"], p["of"], p["parts"]) for p in parts} == {(9, "part", "display", len(parts))}
        assert json.loads("".join(p["data"] for p in parts)) == event
