"""The snippet's own Python lane (runner/pylane.py): its frames and the calls they made, recorded
with sys.monitoring in the snippet's code alone, in place of JAX's Python tracer (every call of the
process: 460,000 of JAX's own when a run traces and lowers its code)."""

from __future__ import annotations

import threading

from executor.runner import pylane
from executor.runner.common import SNIPPET_FILENAME

CODE = """\
import json
def square(v):
    return v * v
def gen():
    yield square(2)
    yield square(3)
class Box:
    def get(self):
        return square(4)
total = sum(gen()) + Box().get()
text = json.dumps({"total": total})
try:
    square(None)
except TypeError:
    pass
"""


def record(code: str, **kwargs) -> tuple[pylane.SnippetLane, dict]:
    lane = pylane.SnippetLane(**kwargs)
    assert lane.start()
    namespace: dict = {"__name__": "__main__"}
    try:
        exec(compile(code, SNIPPET_FILENAME, "exec"), namespace)
    finally:
        lane.stop()
    return lane, namespace


def test_the_snippets_frames_and_the_calls_they_made_are_recorded_and_nothing_else():
    lane, namespace = record(CODE)
    assert namespace["total"] == 4 + 9 + 16
    frames = [c for c in lane.calls if c[5]]
    calls = [c for c in lane.calls if not c[5]]
    names = [c[0] for c in frames]
    # Its frames: the module, each call of its functions (a method, a generator's runs apart).
    assert names.count("<module>") == 1 and names.count("square") == 4 and names.count("Box.get") == 1
    assert names.count("gen") == 3  # started, resumed after each yield
    # What it called that is not its own, with where it is: json.dumps by its file, sum a builtin.
    called = {c[0]: c[1] for c in calls}
    assert called["dumps"].endswith("json/__init__.py") and called["sum"] == "builtins", called
    # JAX's or the standard library's own calls made inside those are not recorded.
    assert not any(c[0] in ("JSONEncoder.encode", "encode", "iterencode") for c in lane.calls), lane.calls
    # Every entry has its end after its start, each inside the module's span.
    module = next(c for c in frames if c[0] == "<module>")
    for name, _file, _line, start, end, _mine in lane.calls:
        assert module[3] <= start <= end <= module[4], name
    # A call that raised is closed too (square(None): a frame that unwound).
    assert sum(1 for c in frames if c[0] == "square") == 4


def test_stopping_switches_every_event_off_and_frees_its_tool():
    lane, _ = record("def f():\n    return 1\nf()\n")
    before = len(lane.calls)
    exec(compile("def f():\n    return 1\nf()\n", SNIPPET_FILENAME, "exec"), {})
    assert len(lane.calls) == before
    again = pylane.SnippetLane()
    assert again.start()  # the tool id is free again
    again.stop()


def test_past_its_bound_the_lane_stops_and_says_when():
    lane, namespace = record("def g(i):\n    return i\nn = 0\nfor i in range(5000):\n    n += g(i)\n", max_calls=1000)
    assert namespace["n"] == sum(range(5000))  # the code ran to its end all the same
    assert 1000 <= len(lane.calls) <= 1001 and lane.stopped_at_ns is not None


def test_a_snippets_threads_have_their_own_frames():
    code = ("import threading\ndef work():\n    return sum(range(10))\n"
            "ts = [threading.Thread(target=work) for _ in range(3)]\n"
            "[t.start() for t in ts]\n[t.join() for t in ts]\n")
    lane, _ = record(code)
    assert [c[0] for c in lane.calls if c[5]].count("work") == 3
    assert threading.active_count() >= 1
