"""What runner/profile.py makes of a profile, outside the sandbox: planes made here (a GPU's
plane, which of the Python lane is kept, the op kinds read from optimised HLO, the bounds, each
said when it cut something, and the launches that say an op's device where the op does not), and
each runtime's own profile of pmaps whose runs say which device ran them (the device each op is
given, found from its launch, checked against that and, on JAX 0.12, against the op's own
ordinal). The sandboxed run is test_profile.py's."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from executor import runtimes
from executor.runner import profile
from executor.supervisor import check_trace

ROOT = Path(__file__).resolve().parents[2]
CATALOG = runtimes.catalog()


HLO = """\
HloModule jit_step, is_scheduled=true, entry_computation_layout={(f32[8,8]{1,0})->f32[8,8]{1,0}}

%fused_dot (p0: f32[8,8], p1: f32[8,8]) -> f32[8,8] {
  %p0 = f32[8,8]{1,0} parameter(0)
  %p1 = f32[8,8]{1,0} parameter(1)
  ROOT %dot.1 = f32[8,8]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%wrapped_reduce_computation (p: f32[8,8]) -> f32[8] {
  %p = f32[8,8]{1,0} parameter(0)
  %c = f32[] constant(0)
  ROOT %reduce.2 = f32[8]{0} reduce(%p, %c), dimensions={1}, to_apply=%add
}

%fused_sin (p0.1: f32[8,8]) -> f32[8,8] {
  %p0.1 = f32[8,8]{1,0} parameter(0)
  ROOT %sine.3 = f32[8,8]{1,0} sine(%p0.1)
}

ENTRY %main.9 (x: f32[8,8]) -> f32[8,8] {
  %x = f32[8,8]{1,0} parameter(0)
  %dot_fusion = f32[8,8]{1,0} fusion(%x, %x), kind=kOutput, calls=%fused_dot
  %wrapped_reduce = f32[8]{0} fusion(%dot_fusion), kind=kLoop, calls=%wrapped_reduce_computation
  %sin_fusion = f32[8,8]{1,0} fusion(%dot_fusion), kind=kLoop, calls=%fused_sin
  %all-reduce.4 = f32[8,8]{1,0} all-reduce(%sin_fusion), replica_groups={}, to_apply=%add
  %gemm = (f32[8,8]{1,0}, s8[0]{0}) custom-call(%x, %x), custom_call_target="__cublas$gemm"
  %transpose.5 = f32[8,8]{0,1} transpose(%x), dimensions={1,0}
  ROOT %add.6 = f32[8,8]{1,0} add(%all-reduce.4, %transpose.5)
}
"""


def test_op_kinds_come_from_the_optimised_hlo():
    module, kinds = profile.hlo_kinds(HLO)
    assert module == "jit_step"
    assert kinds["dot_fusion"] == "matmul"
    assert kinds["wrapped_reduce"] == "reduce"
    assert kinds["sin_fusion"] == "fusion"
    assert kinds["all-reduce.4"] == "collective"
    assert kinds["gemm"] == "matmul"
    assert kinds["transpose.5"] == "copy"
    assert kinds["add.6"] == "elementwise"
    assert profile.name_kind("psum.7") == "collective"
    assert profile.name_kind("loop_multiply_fusion") == "fusion"
    assert profile.name_kind("mystery") == "other"


def ev(name, start_us, dur_us, **stats):
    return NS(name=name, start_ns=start_us * 1000.0, duration_ns=dur_us * 1000.0, stats=list(stats.items()))


def space(*planes):
    return NS(planes=[NS(name=name, lines=[NS(name=ln, events=evs) for ln, evs in lines]) for name, lines in planes])


def test_a_gpu_plane_becomes_a_lane_named_after_it_with_its_modules_and_ops():
    trace, info = profile.build_trace(space(
        ("/device:GPU:0", [("XLA Modules", [ev("jit_step", 0, 100)]),
                           ("XLA Ops", [ev("dot_fusion", 1, 60, hlo_op="dot_fusion", hlo_module="jit_step"),
                                        ev("all-reduce.4", 70, 20, hlo_op="all-reduce.4", hlo_module="jit_step")])]),
        ("/device:GPU:1", [("XLA Ops", [ev("all-reduce.4", 90, 5, hlo_op="all-reduce.4", hlo_module="jit_step")])]),
    ), jax_version="test", platform="gpu")
    assert info["lanes"] == ["Host", "/device:GPU:0", "/device:GPU:1"] and info["devices"] == 2
    timed = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["cat"]) for e in timed if e["pid"] == 10] == [
        ("jit_step", "module"), ("dot_fusion", "matmul"), ("all-reduce.4", "collective")]
    rows = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert set(rows.values()) == {"XLA Modules", "XLA Ops"}
    first = info["summary"][0]
    assert first["device"] == "/device:GPU:0" and first["busy_us"] == 80.0 and first["span_us"] == 94.0
    assert min(e["ts"] for e in timed) == 0.0  # times from the first event, in microseconds


def host_plane(python=(), threads=()):
    return ("/host:CPU", [("python", list(python)), *threads])


def test_the_python_lane_keeps_the_snippets_frames_and_what_they_called():
    python = [ev("$<snippet>:1 <module>", 0, 1000), ev("$api.py:10 jit", 10, 100),
              ev("$inner.py:5 deep", 20, 50),  # called by jit, not by the snippet: left out
              ev("$<snippet>:4 work", 200, 500), ev("$pjit.py:99 cache_miss", 210, 400)]
    trace, info = profile.build_trace(space(host_plane(python)), jax_version="test", platform="cpu")
    names = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "python"]
    assert names == ["<module>", "jit (api.py)", "work", "cache_miss (pjit.py)"]
    work = next(e for e in trace["traceEvents"] if e.get("name") == "work")
    assert work["args"] == {"file": "<snippet>", "line": 4} and work["dur"] == 500.0
    assert info["cut"] == "" and info["lanes"] == ["Host"]


def test_past_its_bounds_the_trace_is_cut_and_says_so(monkeypatch):
    ops = [ev("fusion.1", i * 10, 5, hlo_op="fusion.1", hlo_module="jit_f", device_ordinal=0, run_id=i)
           for i in range(100)]
    python = [ev("$<snippet>:1 <module>", 0, 2000)] + [ev(f"$<snippet>:{i} f", i * 10, 1 + i % 7) for i in range(60)]
    monkeypatch.setattr(profile, "MAX_EVENTS", 80)
    monkeypatch.setattr(profile, "MAX_PYTHON_EVENTS", 10)
    trace, info = profile.build_trace(space(host_plane(python, [("tf_XLAExecute/1", ops)])),
                                      device_names={0: "TFRT_CPU_0"}, jax_version="test", platform="cpu")
    timed = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    kinds = [e["cat"] for e in timed]
    assert len(timed) == info["events"] <= 80
    assert kinds.count("python") == 10
    # The Python calls kept are the longest; the device's ops the first ones in time.
    assert min(e["dur"] for e in timed if e["cat"] == "python") >= 6
    ops_kept = sorted(e["args"]["run_id"] for e in timed if e["cat"] == "fusion")
    assert ops_kept == list(range(len(ops_kept))) and len(ops_kept) < 100
    assert "the first" in info["cut"] and "longest" in info["cut"] and trace["otherData"]["cut"] == info["cut"]
    # What was cut goes with the sentences it was made from, for a page in another language.
    assert [said.template for said in info["cut_parts"]] == [profile.DEVICE_OPS_CUT, profile.PYTHON_CUT]
    assert "; ".join(info["cut_parts"]) == info["cut"]
    # The summary is of all the device's ops, not only those kept.
    assert info["summary"][0]["ops"][0][2] == 100

    # Past the compressed bound: the Python lane goes first, then half the rest at a time.
    monkeypatch.setattr(profile, "MAX_GZIP_BYTES", 600)
    data, raw = profile.encode(trace, info)
    kept = json.loads(gzip.decompress(data))
    assert len(data) <= 600 or info["events"] == 0
    assert not [e for e in kept["traceEvents"] if e.get("cat") == "python"]
    assert "compressed" in info["cut"] and kept["otherData"]["cut"] == info["cut"] and raw > len(data)
    [said] = info["cut_parts"]
    assert said.template in (profile.OVER_SIZE_PYTHON, profile.OVER_SIZE_EVENTS) and said == info["cut"]


@pytest.mark.parametrize("data, words", [
    (base64.b64encode(gzip.compress(b"{" + b" " * (65 * 1024**2) + b"}")).decode(), "times its size"),
    (base64.b64encode(b"not gzip at all").decode(), "not gzip"),
    ("@@@", "not base64"),
    (base64.b64encode(gzip.compress(b"[1, 2]")).decode(), "one gzipped JSON object"),
    (base64.b64encode(gzip.compress(b"{}")[:-4]).decode(), "one gzipped JSON object"),
    (base64.b64encode(gzip.compress(b"{}") + b"more").decode(), "one gzipped JSON object"),
], ids=["bomb", "not-gzip", "not-base64", "not-an-object", "truncated", "trailing"])
def test_the_supervisor_refuses_what_is_not_a_bounded_trace(data, words):
    trace, problem = check_trace(data)
    assert trace is None and words in problem


def test_the_supervisor_takes_a_real_trace_as_it_is():
    data = gzip.compress(json.dumps({"traceEvents": []}).encode())
    assert check_trace(base64.b64encode(data).decode()) == (data, None)


# An op that does not say its device (JAX before 0.7 on a CPU device) -----------------------------

def flow(name, at_us, **stats):
    return ev(f"ThreadpoolListener::{name}", at_us, 0, **stats)


def task(flow_id, start_us, events, end_us):
    """A thread pool's task: what the Record ``flow_id`` scheduled, on a pool thread."""
    return [flow("StartRegion", start_us, _ct=15, _c=flow_id), *events, flow("StopRegion", end_us)]


def ops(start_us, program=7, module="pmap_step"):
    return [ev("fusion.1", start_us, 2, hlo_op="fusion.1", hlo_module=module, program_id=program),
            ev("all-reduce.2", start_us + 3, 4, hlo_op="all-reduce.2", hlo_module=module, program_id=program)]


def old_runtime_pmap(deferred: bool = False):
    """JAX 0.4.38's profile of a pmap over 2 devices: its Execute on the Python thread hands each
    device's part to the pool (Records 1, 2: devices 0, 1 of the executable), each part hands its
    ops on (Records 3, 4). ``deferred``: device 1's part found its inputs not ready, and its ops
    were launched later from the thread that readied them (Record 9, in a copy's task)."""
    python = [ev("$<snippet>:1 <module>", 0, 200), ev("TfrtCpuExecutable::Execute", 10, 50),
              ev("TfrtCpuExecutable::Execute", 10, 50, _pt=5, _p=1),
              flow("Record", 11, _pt=15, _p=1), flow("Record", 12, _pt=15, _p=2)]
    part_0 = task(1, 20, [ev("TfrtCpuExecutable::ExecuteHelper", 20, 5), flow("Record", 21, _pt=15, _p=3)], 26)
    part_1 = task(2, 20, [ev("TfrtCpuExecutable::ExecuteHelper", 20, 5)]
                  + ([] if deferred else [flow("Record", 22, _pt=15, _p=4)]), 26)
    copy = task(8, 27, [ev("D2D Dispatch", 27, 2), flow("Record", 28, _pt=15, _p=9)], 30)
    return space(host_plane(python, [
        ("tf_XLATfrtCpuClient/1", part_0 + task(3, 30, ops(31), 40)),
        ("tf_XLATfrtCpuClient/2", part_1 + task(9 if deferred else 4, 30, ops(32), 40)),
        ("tf_XLATfrtCpuClient/3", copy),
    ]))


NAMES = {0: "TFRT_CPU_0", 1: "TFRT_CPU_1"}


def device_ops(trace) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e["cat"] != "python":
            out.setdefault(names[e["pid"]], []).append(e["name"])
    return out


def test_an_op_without_an_ordinal_is_on_the_device_its_launch_says():
    """The k-th Record of the Execute is the k-th device of its executable (here in the other
    order than the local devices'), whose run is a module event made of its ops; a collective's
    wait is measured when every device of the run is known."""
    asked = []

    def executables(modules):
        asked.append(modules)
        return {7: (1, 0)}

    trace, info = profile.build_trace(old_runtime_pmap(), device_names=NAMES, jax_version="0.4.38",
                                      platform="cpu", executables=executables)
    assert asked == [{"pmap_step"}]
    assert info["lanes"] == ["Host", "TFRT_CPU_0", "TFRT_CPU_1"] and info["devices"] == 2 and info["cut"] == ""
    assert device_ops(trace) == {"TFRT_CPU_1": ["pmap_step", "fusion.1", "all-reduce.2"],
                                 "TFRT_CPU_0": ["pmap_step", "fusion.1", "all-reduce.2"]}
    timed = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    first = next(e for e in timed if e["name"] == "fusion.1" and e["args"]["device"] == "TFRT_CPU_1")
    assert first["ts"] == 31.0  # Record 1's part's ops: device 0 of the executable, TFRT_CPU_1
    waits = sorted(e["args"]["wait_us"] for e in timed if e["name"] == "all-reduce.2")
    assert waits == [0.0, 1.0]


def test_an_op_whose_launch_the_profile_does_not_show_is_on_its_thread_s_lane():
    trace, info = profile.build_trace(old_runtime_pmap(deferred=True), device_names=NAMES, jax_version="0.4.38",
                                      platform="cpu", executables=lambda modules: {7: (1, 0)})
    assert info["lanes"] == ["Host", "TFRT_CPU_1", "XLA thread 1"] and info["devices"] == 1
    assert device_ops(trace)["XLA thread 1"] == ["pmap_step", "fusion.1", "all-reduce.2"]
    assert "the device of 1 of 2 runs" in info["cut"] and trace["otherData"]["cut"] == info["cut"]
    labels = {e["pid"]: e["args"]["labels"] for e in trace["traceEvents"] if e["name"] == "process_labels"}
    assert labels[profile.THREAD_PID + 1].startswith("host thread")
    # Half a run known: no wait is measured against a device that is not.
    assert all("wait_us" not in e["args"] for e in trace["traceEvents"] if e["name"] == "all-reduce.2")
    # Nor is a device named without its executable's devices (gone, or of another count).
    for executables in (lambda modules: {}, lambda modules: {7: (0, 1, 2)}, None):
        _trace, info = profile.build_trace(old_runtime_pmap(), device_names=NAMES, jax_version="0.4.38",
                                           platform="cpu", executables=executables)
        assert info["lanes"] == ["Host", "XLA thread 1", "XLA thread 2"], info["lanes"]


def test_a_one_device_executable_run_inline_is_on_its_device():
    python = [ev("TfrtCpuExecutable::Execute", 0, 20), ev("TfrtCpuExecutable::ExecuteHelper", 1, 18),
              *ops(2, program=3, module="jit_f")]
    trace, info = profile.build_trace(space(host_plane(python)), device_names={3: "TFRT_CPU_3"},
                                      jax_version="0.4.38", platform="cpu", executables=lambda modules: {3: (3,)})
    assert info["lanes"] == ["Host", "TFRT_CPU_3"]
    assert device_ops(trace) == {"TFRT_CPU_3": ["jit_f", "fusion.1", "all-reduce.2"]}


# Each runtime's own profile ------------------------------------------------------------------------

# Runs in a runtime's interpreter (argv: the repository), as runner/profile.py does there. Each
# device of a pmap runs a branch of its own: the k-th of the pmap's devices runs k + 1 multiply
# fusions (a sort apart), so a run's ops say which device ran them. The runs go one at a time
# (each waited for: every launch is in the profile), then back to back (a run waits for the one
# before, and is launched from the thread that ends it: its launch is not in the profile). Each
# op's device is found from its launch alone (use_ordinals=False) and compared with what its run
# says (JAX 0.4 and 0.6 name a pmap's module after its function) and with the op's own ordinal
# (JAX 0.12).
PROBE = r"""
import collections, json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp, numpy as np
from executor.runner import jaxcompat, profile

local = jax.local_devices()
names = jaxcompat.device_names()

def branch(k):
    def run(w):
        for j in range(k + 1):
            w = jnp.sort(jnp.sin(w) * (1.5 + j))
        return w
    return run

def branches(v):
    return jax.lax.psum(jax.lax.switch(jax.lax.axis_index("i"), [branch(k) for k in range(8)], v), "i")

def body_all(v):
    return branches(v)

def body_reversed(v):
    return branches(v)

def body_half(v):
    return branches(v)

def single(v):
    return jnp.cos(v) * 3

x = np.ones((8, 64), np.float32)
runs = {}  # module: its devices' lanes, in the pmap's order
programs = []
for body, devices in ((body_all, local), (body_reversed, local[::-1]), (body_half, local[4:])):
    runs["pmap_" + body.__name__] = [names[local.index(d)] for d in devices]
    sharded = jax.pmap(lambda v: v, devices=devices)(x[:len(devices)])
    programs.append((jax.pmap(body, axis_name="i", devices=devices), sharded))
runs["jit_single"] = [names[3]]
programs.append((jax.jit(single), jax.device_put(x[0], local[3])))

def go(wait):
    out = []
    for f, a in programs:
        out.append(f(a))
        if wait:
            out[-1].block_until_ready()
    jax.block_until_ready(out)

go(True)
session = jaxcompat.profiler_start(python_tracer=False)
go(True)
go(False)
space = jaxcompat.profiler_stop(session)
host = list(space.find_plane_with_name("/host:CPU").lines)
found = profile._Builder(names, use_ordinals=False)
said = profile._Builder(names)
for n, line in enumerate(host):
    found.host_line(line, n)
    said.host_line(line, n)
found.resolve(host, jaxcompat.executable_devices)

said_lane = {id(mine): said.device_pids[theirs["pid"]] for mine, theirs in zip(found.ops, said.ops)
             if theirs["pid"] is not None}  # JAX 0.12: the op's own ordinal's
by_run = collections.defaultdict(list)  # (its launch or run id, its lane): its ops
for op in found.ops:
    by_run[(op["span"], op["pid"])].append(op)
checked = collections.Counter()
for (_span, pid), ops in by_run.items():
    lane = found.device_pids[pid]
    lanes = runs.get(ops[0]["event"]["args"]["hlo_module"])
    if lane.startswith("XLA thread"):
        checked["not known"] += 1
    elif id(ops[0]) in said_lane:
        checked["right" if {said_lane[id(op)] for op in ops} == {lane} else "WRONG"] += 1
    elif lanes is None:
        checked["not checked"] += 1
    else:
        k = sum("multiply" in e["name"] for op in ops for e in (op["event"], *op["children"])) - 1
        checked["right" if lane == lanes[k if len(lanes) > 1 else 0] else "WRONG"] += 1
ordinals = collections.Counter()
for op in found.ops:
    if id(op) not in said_lane:
        ordinals["none"] += 1
    elif found.device_pids[op["pid"]].startswith("XLA thread"):
        ordinals["not known"] += 1
    else:
        ordinals["same" if found.device_pids[op["pid"]] == said_lane[id(op)] else "DIFFERENT"] += 1
print(json.dumps({"jax": jax.__version__, "runs": checked, "ordinals": ordinals}))
"""


@pytest.mark.parametrize("runtime_id", CATALOG.own_ids)
def test_each_runtime_s_ops_are_on_the_device_their_launch_says(runtime_id):
    """Every run whose launch is in the profile is on its device, none on another; the runs
    launched from a thread that ended another are on their threads' lanes. On JAX 0.12, whose
    ops say their device, the same device for every op found so."""
    rt = CATALOG.runtimes[runtime_id]
    assert runtimes.is_built(rt), f"build it: python -m executor.runtimes build {rt.id}"
    out = subprocess.run([str(runtimes.python_of(rt)), "-c", PROBE, str(ROOT)], capture_output=True, text=True,
                         timeout=300, cwd="/tmp", env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "HOME": "/tmp"})
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["jax"] == rt.jax
    runs, ordinals = facts["runs"], facts["ordinals"]
    assert "WRONG" not in runs and "DIFFERENT" not in ordinals and "not checked" not in runs, facts
    # Which runs' launches the profile shows depends on timing (a part whose input is not ready is
    # launched later by another thread): on a busy machine fewer of the waited-for runs are placed,
    # but some always are, and none on a wrong device.
    assert runs.get("right", 0) >= 4, facts
    assert ("none" in ordinals) == (rt.jax.startswith(("0.4.", "0.6.")))
