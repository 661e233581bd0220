"""runner/xspace.py, the reader of the older runtimes' profiles (serialized XSpace bytes): the
same planes, lines, events and stats as jaxlib's ProfileData reads from the same bytes (JAX
0.12's own reader), what each runtime's profile of a pmap on 8 simulated CPU devices holds (the
stats that name an op, its module and its device), and ValueError for bytes that are not an
XSpace, never a hang or another exception.

Each runtime's profile is taken in that runtime's own interpreter (a subprocess, which imports
xspace.py by its path: it is standard library only), as runner/profile.py will take it there.
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import time
from pathlib import Path

import pytest

from executor import runtimes
from executor.runner import xspace

XSPACE_PY = Path(xspace.__file__).resolve()
CATALOG = runtimes.catalog()

# What each pinned runtime's profile of PROBE holds (facts found on these builds; a runtime not
# named here is held only to what every one has). ``op_lines``: the /host:CPU lines, by name up
# to the "/", whose events are the pmap's HLO ops; ``op_stats``: the stats those events carry
# (besides the flow stats _p/_pt/_c/_ct and _src); ``module``: their hlo_module.
EXPECTED = {
    "jax-0.4.38": {"op_lines": {"tf_XLATfrtCpuClient"}, "op_stats": {"hlo_op", "hlo_module", "program_id"},
                   "module": "pmap_step"},
    "jax-0.6.2": {"op_lines": {"tf_XLAPjRtCpuClient"}, "op_stats": {"hlo_op", "hlo_module", "program_id"},
                  "module": "pmap_step"},
    "jax-0.12.0.1": {"op_lines": {"tf_XLAExecute"},
                     "op_stats": {"hlo_op", "hlo_module", "program_id", "device_ordinal", "run_id"},
                     "module": "jit__fun"},
}
FLOW_STATS = {"_p", "_pt", "_c", "_ct", "_src"}

# Runs in a runtime's interpreter: argv = xspace.py, the file for the bytes. Two profiles of the
# same pmap: with Python tracing, then without. host_tracer_level is set although 2 is its
# default: JAX 0.6.2's default options record no HLO ops.
PROBE = r'''
import importlib.util, json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
spec = importlib.util.spec_from_file_location("xspace", sys.argv[1])
xspace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xspace)
import jax, jax.numpy as jnp
try:
    from jax._src.lib import _profiler as profiler
except ImportError:  # 0.4
    from jax._src.lib import xla_client
    profiler = xla_client.profiler

def step(x):
    return jnp.sin(x) @ x.T + 1

f = jax.pmap(step)
x = jnp.ones((8, 16, 16))
f(x).block_until_ready()

def profiled():
    for _ in range(2):
        f(x).block_until_ready()

def profile(python):
    options = profiler.ProfileOptions()
    options.python_tracer_level = 1 if python else 0
    options.host_tracer_level = 2
    session = profiler.ProfilerSession(options)
    profiled()
    return session.stop()

def facts(data):
    space = xspace.parse_xspace(data)
    host = space.find_plane_with_name("/host:CPU")
    ops, python = [], []
    for line in host.lines:
        for event in line.events:
            stats = dict(event.stats)
            if "hlo_op" in stats:
                ops.append({"line": line.name.split("/")[0], "name": event.name,
                            "stats": {k: v for k, v in stats.items() if isinstance(v, (int, str))}})
            if line.name == "python" and event.name.startswith("$"):
                python.append([event.name, event.stats])
    return {"planes": [p.name for p in space.planes], "lines": [l.name for l in host.lines], "ops": ops,
            "python": python}

with_python = profile(True)
without_python = profile(False)
open(sys.argv[2], "wb").write(with_python)
print(json.dumps({"jax": jax.__version__, "with_python": facts(with_python),
                  "without_python": facts(without_python)}))
'''
PROFILED_LINE = PROBE.splitlines().index("def profiled():") + 1


# A protobuf writer for the synthetic XSpaces -----------------------------------------------------

def varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # an int64 below zero is its two's complement, 10 bytes
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def f_int(field: int, v: int) -> bytes:
    return varint(field << 3) + varint(v)


def f_len(field: int, body: bytes | str) -> bytes:
    body = body.encode() if isinstance(body, str) else body
    return varint(field << 3 | 2) + varint(len(body)) + body


def f_double(field: int, v: float) -> bytes:
    return varint(field << 3 | 1) + struct.pack("<d", v)


def stat(mid: int, kind: str, v) -> bytes:
    value = {"double": lambda: f_double(2, v), "uint": lambda: f_int(3, v), "int": lambda: f_int(4, v),
             "str": lambda: f_len(5, v), "bytes": lambda: f_len(6, v), "ref": lambda: f_int(7, v),
             "none": lambda: b""}[kind]()
    return f_int(1, mid) + value


def stat_metadata(mid: int, name: str) -> bytes:
    return f_len(5, f_int(1, mid) + f_len(2, f_int(1, mid) + f_len(2, name)))


def event_metadata(mid: int, name: str = "", display_name: str = "", stats: tuple = ()) -> bytes:
    body = f_int(1, mid) + (f_len(2, name) if name else b"") + (f_len(4, display_name) if display_name else b"")
    body += b"".join(f_len(5, s) for s in stats)
    return f_len(4, f_int(1, mid) + f_len(2, body))


def event(mid: int, offset_ps: int = 0, duration_ps: int = 0, stats: tuple = (), tail: bytes = b"") -> bytes:
    body = (f_int(1, mid) if mid else b"") + (f_int(2, offset_ps) if offset_ps else b"")
    body += (f_int(3, duration_ps) if duration_ps else b"") + b"".join(f_len(4, s) for s in stats) + tail
    return f_len(4, body)


def synthetic() -> bytes:
    """A plane with what XPlane can hold and a profiler seldom writes: negative int64s, every
    kind of stat value, interned strings, a stat or event whose metadata is missing, an event
    metadata with a display name only, num_occurrences, fields out of order, unknown fields."""
    plane = f_int(1, 7) + f_len(2, "/device:TEST:0")
    plane += stat_metadata(1, "count") + stat_metadata(2, "kind") + stat_metadata(3, "interned")
    plane += event_metadata(10, "op", stats=(stat(1, "int", 42), stat(2, "str", "shared")))
    plane += event_metadata(11, display_name="shown")
    plane += event_metadata(12, "named", display_name="also shown")
    line = f_int(1, 5) + f_len(2, "Ops") + f_int(3, 1000) + f_len(11, "XLA Ops") + f_int(9, 77)
    line += event(10, 1500, 2999, stats=(stat(2, "ref", 3), stat(1, "int", -5)))
    line += event(11, -2500, 7, stats=(stat(9, "int", 1), stat(1, "uint", 2**64 - 1), stat(1, "double", 1.5),
                                       stat(2, "bytes", b"\x01\x02"), stat(2, "ref", 99), stat(1, "none", 0)))
    line += event(12, duration_ps=4000, tail=f_int(5, 3))  # num_occurrences
    line += event(99, 5_000_000)  # its metadata is missing
    line += f_len(4, f_int(3, 2000) + f_int(2, 9000) + f_int(1, 10))  # fields in another order
    line += event(10, 1_000_000, 1, tail=f_int(15, 1) + f_len(16, b"?") + f_double(17, 0.0))  # unknown fields
    line += f_len(4, b"")  # an empty event
    plane += f_len(3, line) + f_len(6, stat(1, "int", 3)) + f_len(6, stat(3, "str", "plane stat"))
    plane += f_len(3, f_len(2, "empty line") + f_int(3, -1))
    return (f_len(1, plane) + f_len(1, f_len(2, "/host:CPU")) + f_len(2, "an error") + f_len(3, "a warning")
            + f_len(4, "host0"))


def read_all(space) -> list:
    """Everything the space says, read (so that lazily decoded parts are decoded)."""
    return [(p.name, list(p.stats), [(line.name, [(e.name, e.start_ns, e.duration_ns, e.end_ns, list(e.stats))
                                                  for e in line.events]) for line in p.lines])
            for p in space.planes]


# ProfileData's stats iterators are types without a __module__, which Python 3.12 warns of.
profile_data_warnings = pytest.mark.filterwarnings("ignore:builtin type:DeprecationWarning")


def profile_data_view(data: bytes) -> list:
    """read_all of jaxlib's own reader (JAX 0.12's ProfileData) on the same bytes."""
    profile_data = pytest.importorskip("jaxlib._profile_data")
    return read_all(profile_data.ProfileData.from_serialized_xspace(data))


def as_profile_data_says(view: list) -> list:
    """xspace's reading with ProfileData's one other convention: a bytes_value as str."""
    def stats(items):
        return [(k, v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in items]
    return [(p, stats(ps), [(ln, [(*e[:4], stats(e[4])) for e in events]) for ln, events in lines])
            for p, ps, lines in view]


# Synthetic XSpaces ---------------------------------------------------------------------------------

def test_a_synthetic_space_reads_as_the_schema_says():
    space = xspace.parse_xspace(synthetic())
    assert [p.name for p in space.planes] == ["/device:TEST:0", "/host:CPU"]
    assert (space.errors, space.warnings, space.hostnames) == (["an error"], ["a warning"], ["host0"])
    plane = space.find_plane_with_name("/device:TEST:0")
    assert space.find_plane_with_name("/device:NONE") is None
    assert xspace.parse_xspace(b"").planes == []
    assert plane.id == 7 and plane.stats == [("count", 3), ("interned", "plane stat")]
    line, empty = plane.lines
    assert (line.id, line.name, line.display_name, line.timestamp_ns, line.duration_ps) == (
        5, "Ops", "XLA Ops", 1000, 77)
    assert (empty.name, empty.timestamp_ns, empty.events) == ("empty line", -1, [])
    events = line.events
    assert [(e.name, e.start_ns, e.duration_ns, e.end_ns) for e in events] == [
        ("op", 1001.0, 2.0, 1003.0),  # ps // 1000: 1500 ps is 1 ns, 2999 ps 2 ns
        ("shown", 998.0, 0.0, 998.0),  # -2500 ps is -2 ns, as C++ divides; the display name
        ("named", 1000.0, 4.0, 1004.0),  # num_occurrences: no offset
        ("", 6000.0, 0.0, 6000.0),  # no metadata: no name
        ("op", 1009.0, 2.0, 1011.0),
        ("op", 2000.0, 0.0, 2000.0),
        ("", 1000.0, 0.0, 1000.0),
    ]
    assert all(isinstance(v, float) for e in events for v in (e.start_ns, e.duration_ns, e.end_ns))
    assert events[0].stats == [("kind", "interned"), ("count", -5)]
    assert events[1].stats == [(None, None), ("count", 2**64 - 1), ("count", 1.5), ("kind", b"\x01\x02"),
                               ("kind", ""), (None, None)]
    assert [e.stats for e in events[2:]] == [[], [], [], [], []]
    assert events[0].metadata_stats == [("count", 42), ("kind", "shared")] and events[3].metadata_stats == []
    assert (events[0].metadata_id, events[3].metadata_id) == (10, 99)
    meta = plane.event_metadata
    assert (meta[11].name, meta[11].display_name, meta[12].name, meta[12].display_name) == (
        "", "shown", "named", "also shown")


@profile_data_warnings
def test_a_synthetic_space_reads_as_profile_data_reads_it():
    """ProfileData (JAX 0.12's reader) on the same bytes: the same but where xspace is documented
    to differ, an event whose metadata has only a display name (ProfileData: "")."""
    data = synthetic()
    theirs = profile_data_view(data)
    ours = as_profile_data_says(read_all(xspace.parse_xspace(data)))
    their_events = theirs[0][2][0][1]  # the first plane's first line's
    assert ours[0][2][0][1][1][0] == "shown" and their_events[1][0] == ""
    their_events[1] = ("shown", *their_events[1][1:])
    assert ours == theirs


@profile_data_warnings
def test_a_value_that_is_not_utf_8_is_read_not_refused():
    """A str_value that is not UTF-8 reads with U+FFFD in its place, a bytes_value as bytes; where
    ProfileData refuses the first's whole XSpace and raises on the second (it makes it str)."""
    def space(value: bytes, kind: str) -> bytes:
        return f_len(1, stat_metadata(1, "s") + event_metadata(1, "e") + f_len(3, event(1, 1000, stats=(
            stat(1, kind, value),))))

    assert xspace.parse_xspace(space(b"a\xffb", "str")).planes[0].lines[0].events[0].stats == [("s", "a\ufffdb")]
    assert xspace.parse_xspace(space(b"\xff", "bytes")).planes[0].lines[0].events[0].stats == [("s", b"\xff")]
    with pytest.raises(RuntimeError):
        profile_data_view(space(b"a\xffb", "str"))
    with pytest.raises(UnicodeDecodeError):
        profile_data_view(space(b"\xff", "bytes"))


def test_200_000_events_read_whole_in_bounded_time():
    """A trace's size: 200,000 events on 4 lines, a third with stats (a generous bound: the
    figure on a 2-core machine is about 0.4 s for the events, 0.25 s more for every stat)."""
    plane = f_len(2, "/host:CPU") + b"".join(stat_metadata(i, f"stat{i}") for i in range(1, 6))
    plane += b"".join(event_metadata(i, f"op.{i}") for i in range(1, 51))
    for n in range(4):
        events = []
        for i in range(50_000):
            stats = (stat(1, "int", i), stat(2, "ref", 3)) if i % 3 == 0 else ()
            events.append(event(1 + i % 50, 1_000_000 * i + 123_456, 654_321 + i, stats))
        plane += f_len(3, f_int(1, n) + f_len(2, f"thread {n}") + f_int(3, 10**9) + b"".join(events))
    data = f_len(1, plane)
    t0 = time.perf_counter()
    space = xspace.parse_xspace(data)
    events = [e for line in space.planes[0].lines for e in line.events]
    read = sum(len(e.stats) for e in events)
    took = time.perf_counter() - t0
    assert len(events) == 200_000 and read == 2 * 66_668
    assert events[3].start_ns == 10**9 + 3000 + 123 and events[3].duration_ns == 654.0
    assert events[3].stats == [("stat1", 3), ("stat2", "stat3")]
    assert took < 10, took


# Malformed bytes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    b"\x0a",  # a length that never comes
    b"\x0a" + b"\xff" * 40,  # a varint that never ends
    b"\x0a\xff\xff\xff",  # one cut short by the end
    b"\x0a" + b"\xff" * 10 + b"\x01",  # 11 bytes: longer than any varint
    b"\x0a\x05ab",  # a length past the end
    b"\x0a\x03\x12\x05a",  # a field past its message's end
    b"\x0b",  # wire type 3 (a group: not in XPlane)
    b"\x0f",  # wire type 7
    b"\x00\x00",  # field number 0
    b"\x0a\x02\x1a\x05",  # a line past its plane's end
    f_len(1, f_len(3, b"\x22\x05\x08\x01")),  # an event past its line's end
    f_len(1, f_len(3, b"\x22\x03\x08\x01\x10")),  # a field past its event's end
    f_len(1, f_len(3, b"\x22\x02\x10\x80")),  # a varint past its event's end
    f_len(1, f_len(3, f_len(4, f_int(2, 5) + b"\x13"))),  # wire type 3 in an event
])
def test_malformed_bytes_raise_value_error(data):
    with pytest.raises(ValueError):
        read_all(xspace.parse_xspace(data))


def test_a_stat_past_its_event_raises_when_the_stats_are_read():
    data = f_len(1, stat_metadata(1, "s") + event_metadata(1, "e")
                 + f_len(3, f_len(4, f_int(1, 1) + f_int(2, 5) + b"\x22\x03\x08\x01\x28")))  # 0x28: no value
    space = xspace.parse_xspace(data)
    (event,) = space.planes[0].lines[0].events
    assert event.name == "e"
    with pytest.raises(ValueError):
        _ = event.stats


def _each_cut_and_mutation(data: bytes, n_cuts: int, n_mutations: int, seed: int):
    rng = random.Random(seed)
    cuts = range(len(data)) if len(data) <= n_cuts else sorted(rng.sample(range(len(data)), n_cuts))
    for cut in cuts:
        yield "cut", cut, data[:cut]
    for i in range(n_mutations):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        yield "mutation", i, bytes(mutated)


def _only_value_errors(data: bytes, n_cuts: int, n_mutations: int, seed: int) -> int:
    """Every cut and mutation of data reads whole or raises ValueError; how many raised."""
    raised = 0
    size, start = xspace._varint(data, 1)  # the first plane's length, after its tag
    first_plane_end = start + size
    for kind, at, broken in _each_cut_and_mutation(data, n_cuts, n_mutations, seed):
        try:
            read_all(xspace.parse_xspace(broken))
        except ValueError:
            raised += 1
        else:
            assert not (kind == "cut" and 0 < at < first_plane_end), f"a cut at {at} read as whole"
    return raised


def test_cut_or_mutated_synthetic_bytes_read_or_raise_value_error():
    assert _only_value_errors(synthetic(), n_cuts=10_000, n_mutations=2000, seed=1) > 0


# Each runtime's own profile --------------------------------------------------------------------

@pytest.fixture(scope="module", params=CATALOG.own_ids)
def runtime_profile(request, tmp_path_factory):
    """(the runtime, PROBE's facts, the bytes of its profile with Python tracing)."""
    rt = CATALOG.runtimes[request.param]
    assert runtimes.is_built(rt), f"build it: python -m executor.runtimes build {rt.id}"
    out = tmp_path_factory.mktemp("xspace") / "profile.xplane.pb"
    run = subprocess.run([str(runtimes.python_of(rt)), "-c", PROBE, str(XSPACE_PY), str(out)], capture_output=True,
                         text=True, timeout=240, cwd=str(out.parent),
                         env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "HOME": "/tmp"})
    assert run.returncode == 0, run.stderr[-3000:]
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    assert facts["jax"] == rt.jax
    return rt, facts, out.read_bytes()


def test_each_runtime_s_profile_names_its_ops_modules_and_python_frames(runtime_profile):
    rt, facts, _data = runtime_profile
    profile = facts["with_python"]
    assert {"/host:CPU", "/host:metadata"} <= set(profile["planes"])
    pmap_ops = [op for op in profile["ops"] if op["stats"]["hlo_module"] != "jit__multi_slice"]
    assert pmap_ops, profile["lines"]
    for op in pmap_ops:  # an op event is named after its HLO instruction
        assert op["name"] == op["stats"]["hlo_op"] and isinstance(op["stats"]["program_id"], int)
    # Python tracing: frames "$<file's base name>:<def's line> <function>", without stats, on the
    # line "python" (the main thread's: there without Python tracing too, with JAX's C++ events)
    assert f"$<string>:{PROFILED_LINE} profiled" in [name for name, _stats in profile["python"]]
    assert all(stats == [] for _name, stats in profile["python"])
    assert facts["without_python"]["python"] == [] and "python" in facts["without_python"]["lines"]
    expected = EXPECTED.get(rt.id)
    if expected is None:
        return
    assert {op["line"] for op in pmap_ops} == expected["op_lines"]
    assert {k for op in pmap_ops for k in op["stats"]} - FLOW_STATS == expected["op_stats"]
    assert {op["stats"]["hlo_module"] for op in pmap_ops} == {expected["module"]}
    ordinals = {op["stats"].get("device_ordinal") for op in pmap_ops}
    assert ordinals == (set(range(8)) if "device_ordinal" in expected["op_stats"] else {None})


def test_each_runtime_s_profile_survives_cuts_and_mutations(runtime_profile):
    _rt, _facts, data = runtime_profile
    assert _only_value_errors(data, n_cuts=300, n_mutations=150, seed=2) > 0


@profile_data_warnings
def test_each_runtime_s_profile_reads_as_profile_data_reads_it(runtime_profile):
    """Each runtime's profile, read by xspace and by ProfileData (JAX 0.12's reader, here in the
    executor's environment; XSpace is the same schema on every runtime): the same planes, lines,
    events (names, start, duration, end) and stats, in the same order."""
    _rt, _facts, data = runtime_profile
    theirs = profile_data_view(data)
    ours = as_profile_data_says(read_all(xspace.parse_xspace(data)))
    assert sum(len(events) for _p, _s, lines in ours for _l, events in lines) > 100
    assert ours == theirs
