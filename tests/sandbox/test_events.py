"""How many events a run may send, how fast, and how large, through the real supervisor and
sandbox: a run is bounded in events as it is in bytes."""

from __future__ import annotations

from dataclasses import replace

from executor.supervisor import OUTPUT_EVENT_MAX_CHARS

from .conftest import LIMITS

# Writes n small, valid timing events straight to the runner's event pipe, as fast as it can.
FORGE_N = """\
import os
# The event pipe: the one descriptor beyond stdio that is a pipe.
fd = next(int(f) for f in sorted(os.listdir("/proc/self/fd"), key=int)
          if int(f) > 2 and os.readlink("/proc/self/fd/" + f).startswith("pipe:"))
for i in range({n}):
    os.write(fd, b'{{"type": "timing", "kind": "single", "label": "t%d"}}\\n' % i)
print("done", flush=True)
"""


def test_a_run_that_sends_too_many_events_ends_at_the_limit(run, then_a_normal_run_succeeds):
    limits = replace(LIMITS, events=100, events_per_s=100_000)
    result = run(FORGE_N.format(n=5000), limits)

    assert result.status == "limit_exceeded", result
    assert result.message == "event limit of 100 events exceeded"
    assert len(result.events) <= 100 + 1  # + "started", which run_local adds itself
    assert result.events[-1]["truncated"] is True
    then_a_normal_run_succeeds()


def test_events_beyond_the_rate_wait_and_all_arrive_in_order(run):
    limits = replace(LIMITS, events_per_s=50)
    result = run(FORGE_N.format(n=150), limits)

    assert result.status == "succeeded", result
    timings = result.of("timing")
    assert [t["label"] for t in timings] == [f"t{i}" for i in range(150)]
    # The first second's worth goes at once, the other 100 at 50 a second.
    assert timings[-1]["ts"] - timings[0]["ts"] >= 1.5
    assert result.stdout == "done\n"


def test_large_output_is_sent_in_bounded_events(run):
    limits = replace(LIMITS, output_bytes=1024**2)
    result = run("import sys\n_ = sys.stdout.write('z' * 600_000)\n", limits)

    assert result.status == "succeeded", result
    texts = [e["text"] for e in result.of("stdout")]
    assert "".join(texts) == "z" * 600_000
    assert max(len(t) for t in texts) <= OUTPUT_EVENT_MAX_CHARS


BAD_LINES = """\
import os, time
# The event pipe: the one descriptor beyond stdio that is a pipe.
fd = next(int(f) for f in sorted(os.listdir("/proc/self/fd"), key=int)
          if int(f) > 2 and os.readlink("/proc/self/fd/" + f).startswith("pipe:"))
os.write(fd, b'{"type": []}\\n{"type": {"a": 1}}\\n')
t0 = time.monotonic()
for i in range(0, 200_000, 1000):
    os.write(fd, b"".join(b'{"type": "x%d"}\\n' % (i + j) for j in range(1000)))
print("done", flush=True)
"""


def test_a_flood_of_malformed_event_lines_is_noted_briefly_and_ends_the_run(run, then_a_normal_run_succeeds):
    """A runner never writes a line that is no event: past MAX_JUNK_LINES of them the run ends,
    rather than have the executor parse 200,000 (CPU the run's cgroup is not charged for)."""
    from executor.supervisor import MAX_JUNK_LINES

    result = run(BAD_LINES, replace(LIMITS, wall_s=30))

    assert result.status == "limit_exceeded", result
    assert f"over {MAX_JUNK_LINES} lines on its event pipe that are not events" in result.events[-1]["message"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("[playground]")]
    assert 1 <= len(notes) <= 5
    assert "type is not a string" in notes[0]
    assert result.events[-1]["wall_ms"] < 15_000
    then_a_normal_run_succeeds()
