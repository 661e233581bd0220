"""Graded runs in the real sandbox: the hidden checks run in a checker runner of their own, the
student's code in its runner, and the two speak only data through the supervisor
(executor/graded_run.py). Whatever the student's code does in its process, its grade is what its
answers earn and nothing of the checks reaches what the student sees."""

from __future__ import annotations

import json

import pytest

from executor.local import RunResult, grade_local

from .reach import ANSWERING, RUNNER_MODULE

# The checks carry a marker that must never reach anything the student sees.
MARKER = "HIDDEN_EXPECTED_4471"
CHECKS = f"""
from jaxplay.grading import allclose, check, grad_check, max_compilations, no_float64
import numpy as np
SECRET = "{MARKER}"
EXPECTED = np.float64(9.0)
check("square of 3", allclose(square(3.0), EXPECTED), 2)
with check("gradient", points=2):
    assert grad_check(loss, np.arange(3.0), loss_grad), "the gradient differs from finite differences"
x = np.arange(3.0, dtype=np.float32)
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(loss, 1, (x,), (x + 1,)))
print("checks saw", SECRET)
"""
CORRECT = """
import jax, jax.numpy as jnp
def square(x):
    return x * x
@jax.jit
def loss(w):
    return jnp.sum(w ** 2)
def loss_grad(w):  # by hand
    return 2 * w
print(loss(jnp.arange(3.0)))
"""
WRONG = """
import jax, jax.numpy as jnp
def square(x):
    return x + x
@jax.jit
def loss(w):
    return jnp.sum(w ** 2)
def loss_grad(w):  # by hand, wrongly
    return w
print(loss(jnp.arange(3.0)))
"""
ALL_CHECKS = {"square of 3", "gradient", "no float64", "compiled once"}


@pytest.fixture(scope="module")
def grade(launcher):
    def grade_(code: str, checks: str = CHECKS, wall_s: float = 30) -> tuple[RunResult, dict]:
        events, result = grade_local(code, checks, launcher=launcher, limits=launcher.limits.clamp({"wall_s": wall_s}))
        run = RunResult(events)
        # Nothing the student can see holds the checks, their values or what they printed.
        seen = json.dumps(events) + json.dumps(result["checks"]) + result["message"]
        assert MARKER not in seen and "checks saw" not in seen, seen
        return run, result

    return grade_


def scores(result: dict) -> dict:
    return {c["name"]: c["passed"] for c in result["checks"]}


def test_a_correct_submission_gets_every_point(grade):
    run, result = grade(CORRECT)
    assert run.status == "succeeded" and run.stdout == "5.0\n"
    assert scores(result) == dict.fromkeys(ALL_CHECKS, True), result
    assert (result["score"], result["max_score"], result["outcome"]) == (6.0, 6.0, "checked")
    assert result["error"] == ""
    assert f"checks saw {MARKER}" in result["log"]  # the instructor's


def test_a_wrong_submission_fails_with_messages_that_say_nothing_of_the_checks(grade):
    _run, result = grade(WRONG)
    assert scores(result) == {"square of 3": False, "gradient": False, "no float64": True, "compiled once": True}
    assert result["score"] == 2.0
    by_name = {c["name"]: c for c in result["checks"]}
    # Not the expected value, the difference, nor where: those stay in the instructor's log.
    assert by_name["square of 3"]["message"] == "the values differ from the expected ones"
    assert "largest difference 3" in result["log"]
    assert by_name["gradient"]["message"] == "the gradient differs from finite differences"


def test_a_crashing_submission_is_still_checked(grade):
    run, result = grade(CORRECT + "\nraise ValueError('oops')\n")
    assert run.status == "failed" and run.error["exc_type"] == "ValueError"
    assert result["score"] == 6.0 and "raised an exception" in result["message"]


def test_a_check_that_raises_in_student_code_says_where_not_what(grade):
    code = "def square(x):\n    return {}[x]\n" + CORRECT.split("def square")[0]
    _run, result = grade(code + "\nimport jax\nloss = jax.jit(lambda w: (w ** 2).sum())\nloss_grad = lambda w: 2 * w\n")
    message = {c["name"]: c["message"] for c in result["checks"]}["square of 3"]
    assert message == "square raised KeyError at line 2 of your code"
    assert "KeyError" in result["log"] and "square(3.0)" in result["log"]  # the instructor's traceback


def test_code_that_ends_the_process_or_times_out_scores_nothing(grade):
    for code, status in (("import os\nos._exit(0)", "succeeded"), ("while True: pass", "timed_out")):
        run, result = grade(code, wall_s=3)
        assert run.status == status, (code, run)
        assert result["score"] == 0 and result["outcome"] == "not_run", result
        assert {c["name"] for c in result["checks"]} == ALL_CHECKS
        assert "before the checks could run" in result["error"], result


def test_a_name_the_code_does_not_define_fails_its_check(grade):
    run, result = grade("raise SystemExit(3)")
    assert run.status == "failed"
    messages = {c["name"]: c["message"] for c in result["checks"]}
    assert messages["square of 3"] == "your code does not define square"
    assert result["score"] == 0


def test_checks_that_do_not_compile_are_the_instructors_error(grade):
    _run, result = grade(CORRECT, checks="check('x', True\n")
    assert result["checks"] == [] and "do not compile" in result["error"]


def test_the_checks_imports_and_randomness_are_the_checkers_own(grade):
    checks = """
from jaxplay.grading import allclose, check
import numpy as np, scipy.special
rng = np.random.default_rng(1234)
x = rng.normal(size=4)
check("expit", allclose(expit(x), scipy.special.expit(x)))
check("numpy is numpy", np.allclose(np.ones(2), np.ones(2)) and not np.allclose(np.zeros(2), np.ones(2)))
"""
    student = """
import sys, types, builtins, numpy as np
np.random.seed(0)
fake = types.ModuleType("scipy"); fake.special = types.SimpleNamespace(expit=lambda x: 0.0)
sys.modules["scipy"] = fake; sys.modules["scipy.special"] = fake.special
np.allclose = lambda *a, **k: True
builtins.abs = lambda x: 0
def expit(x):
    return 0.0 * x
"""
    _run, result = grade(student, checks=checks)
    assert scores(result) == {"expit": False, "numpy is numpy": True}, result


def test_values_cross_as_data_with_their_structure(grade):
    checks = """
from jaxplay.grading import allclose, check
import numpy as np
p = params
check("params", allclose(p, {"w": np.ones((2, 3), np.float32), "b": (np.zeros(3), 1.5)}))
check("types", type(p["w"]) is np.ndarray and p["w"].dtype == np.float32 and type(p["b"]) is tuple)
check("calls", allclose(make(2), (np.arange(2), {"n": 2})) and shout("ab") == "AB" and nothing() is None)
check("named tuple", state(3).count == 3 and state(3)._fields == ("count", "total"))
check("bfloat16 and scalars", str(half().dtype) == "bfloat16" and type(scalar()) is np.float32)
"""
    student = """
import collections, jax.numpy as jnp, numpy as np
params = {"w": jnp.ones((2, 3)), "b": (np.zeros(3), 1.5)}
make = lambda n: (jnp.arange(n), {"n": n})
shout = str.upper
nothing = lambda: None
State = collections.namedtuple("State", "count total")
state = lambda n: State(n, 2.0 * n)
half = lambda: jnp.ones(2, jnp.bfloat16)
scalar = lambda: np.float32(1.5)
"""
    _run, result = grade(student, checks=checks)
    assert all(scores(result).values()), result


# -- what a hostile submission tries ----------------------------------------------------------------

# Each runs beside a wrong square (2 points at most: the gradient's and nothing else), and looks
# for the marker wherever its process can look; were it found, it would come back as the name of
# an exception class (the one thing of the student's that a message echoes).
FIND = """
def _needle():  # the marker, built when searched for (never a constant of this code)
    return chr(72) + "IDDEN_EXPECTED_" + str(4400 + 71)
def _leak(found):
    if found:
        raise type("Found" + "".join(c for c in found if c.isalnum())[:30], (Exception,), {})()
def _search_text(text):
    return "found" if _needle() in text else ""
"""
HOSTILE = {
    "walks every frame it can reach": """
import sys
def square(x):
    seen, frame = [], sys._getframe()
    while frame is not None:
        seen.append(repr(frame.f_locals) + repr(frame.f_globals.keys()) + repr(frame.f_code.co_consts))
        frame = frame.f_back
    _leak(_search_text(" ".join(seen)))
    return x + x
""",
    "gets a frame from a signal handler": """
import signal, sys
found = []
def peek(signum, frame):
    while frame is not None:
        found.append(repr(frame.f_locals))
        frame = frame.f_back
signal.signal(signal.SIGUSR1, peek)
def square(x):
    signal.raise_signal(signal.SIGUSR1)
    _leak(_search_text(" ".join(found)))
    return x + x
""",
    "reads its own memory": """
import ctypes
def square(x):
    needle = _needle().encode()  # its one copy, and the buffer read into, are not hits
    own = id(needle) + bytes.__basicsize__ - 1
    buf = bytearray(1 << 20)
    lo_buf = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    hits = scanned = 0
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if "r" not in line.split()[1] or hi - lo > 256 << 20 or "[vvar" in line:
                continue
            for start in range(lo, hi, len(buf)):
                try:
                    mem.seek(start)
                    got = mem.readinto(memoryview(buf)[: min(len(buf), hi - start)])
                except OSError:
                    continue
                scanned += got
                at = buf.find(needle, 0, got)
                while at != -1:
                    if start + at != own and not lo_buf <= start + at < lo_buf + len(buf):
                        hits += 1
                    at = buf.find(needle, at + 1, got)
    print("scanned", scanned >> 20, "MiB")
    _leak("found" if hits or scanned < 10 << 20 else "")
    return x + x
""",
    "reads the other processes it can see": """
import os
def square(x):
    found = ""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for name in ("cmdline", "environ", "mem", "fd/0", "fd/3"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    found = found or _search_text(f.read(1 << 20).decode("latin-1"))
            except OSError:
                pass
    _leak(found)
    return x + x
""",
    "keeps every object the collector frees": """
import gc
gc.set_debug(gc.DEBUG_SAVEALL)
def square(x):
    gc.collect()
    texts = [v for o in gc.garbage + gc.get_objects() if isinstance(o, (dict, list, tuple))
             for v in (o.values() if isinstance(o, dict) else o) if isinstance(v, str)]
    _leak(_search_text(" ".join(texts)))
    return x + x
""",
    "forges messages on every descriptor": """
import json, os
forged = [{"type": "student_done", "status": "succeeded"},
          {"type": "check", "name": "square of 3", "passed": True, "points": 100},
          {"type": "grade", "error": None}, {"type": "answer", "id": 1, "value": 9.0}]
def square(x):
    for fd in range(3, 64):
        for message in forged:
            try:
                os.write(fd, (json.dumps(message) + "\\n").encode())
            except OSError:
                pass
    return x + x
""",
    "answers the questions itself from a thread started at import": """
import json, os, sys, threading
def answer_everything():
    for line in sys.__stdin__:
        try:
            q = json.loads(line)
        except ValueError:
            continue
        for fd in range(3, 16):
            try:
                os.write(fd, (json.dumps({"type": "answer", "id": q.get("id"), "value": 9.0}) + "\\n").encode())
            except OSError:
                pass
threading.Thread(target=answer_everything, daemon=True).start()
""",
    "switches off its compiled events and forges its own": RUNNER_MODULE + """
import jax, jax.numpy as jnp
common = _runner_module("common")
channel = common.outbox.channel
common.outbox.channel = None
jax.config.update("jax_enable_x64", True)
for n in (3, 4, 5):
    loss(jnp.arange(1.0, n + 1.0, dtype=jnp.float64))
channel.send("compiled", name="loss", jaxpr="{ lambda ; a:f32[3]. let in (a,) }", compiles=1, in_types=["f32[3]"])
@jax.jit
def loss(w):
    return jnp.sum(w.astype(jnp.float64) ** 2)
""",
    "returns values that lie when compared": """
import numpy as np
class Always(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), bool)
    def __array__(self, *a, **k): return np.asarray(9.0)
class Liar:
    def __eq__(self, other): return True
    def __float__(self): return 9.0
    def __array__(self, *a, **k): return np.asarray(9.0)
def square(x):
    return Liar() if x == 3.0 else np.asarray(x + x).view(Always)
""",
    "returns a huge or recursive value": """
import numpy as np
def square(x):
    if x == 3.0:
        r = []; r.append(r)
        return r
    return np.zeros((64, 1024, 1024), np.float32)
""",
    "patches the libraries the checks might use": """
import builtins, numpy, jax
numpy.allclose = lambda *a, **k: True
jax.Array.__array__ = lambda self, *a, **k: numpy.float64(9.0)
builtins.bool = lambda x=False: True
import jaxplay.grading as g
g.allclose = lambda *a, **k: True
g.Verdict.__bool__ = lambda self: True
""",
    "calls check itself": """
from jaxplay.grading import check as imported_check
try:
    imported_check("bonus", True, 50)
except RuntimeError as e:
    print("refused:", e)
def square(x):
    try:
        imported_check("bonus", True, 50)
    except RuntimeError:
        pass
    return x + x
""",
    "profiles, traces and registers exit hooks": """
import sys, atexit, os, json
sys.setprofile(lambda *a: None)
sys.settrace(lambda *a: None)
atexit.register(lambda: os.write(3, (json.dumps({"type": "grade", "error": None}) + "\\n").encode()))
""",
    "names its exception after the check's inputs": """
def square(x):
    raise type("Input" + repr(x).replace(".", "d") * 200, (Exception,), {})()
""",
}


@pytest.mark.parametrize("attack", list(HOSTILE))
def test_hostile_code_earns_nothing_and_sees_nothing_of_the_checks(grade, attack):
    run, result = grade(WRONG + FIND + HOSTILE[attack])
    assert result["score"] <= 2.0, (attack, result)
    assert all(c["name"] != "bonus" for c in result["checks"]), result
    assert {c["name"] for c in result["checks"]} == ALL_CHECKS, result
    messages = " ".join(c["message"] for c in result["checks"])
    assert "Found" not in messages and "HIDDEN" not in messages, (attack, result)
    if attack == "reads its own memory":
        assert "scanned" in result["log"], result  # it did look (its output is the instructor's now)
    if attack == "forges messages on every descriptor":
        assert result["outcome"] == "interfered" and result["score"] == 0, result
        assert "interfered with grading" in result["message"]
        assert all(c["message"] == "the submission interfered with grading" for c in result["checks"])
    if attack == "switches off its compiled events and forges its own":
        assert scores(result)["no float64"] is False and scores(result)["compiled once"] is True, result
    if attack == "returns values that lie when compared":
        assert "cannot receive" in {c["name"]: c for c in result["checks"]}["square of 3"]["message"]
    if attack == "names its exception after the check's inputs":
        message = {c["name"]: c["message"] for c in result["checks"]}["square of 3"]
        assert len(message) < 100 and "3d0" in message and message.startswith("square raised Input"), message


# -- swapping the function the answers describe ----------------------------------------------------

# A square in NumPy alone: its values are right, and JAX cannot trace it.
SQUARE_CHECKS = """
from jaxplay.grading import allclose, check, no_float64
import jax, numpy as np
x = np.arange(1.0, 4.0, dtype=np.float32)
check("value", allclose(square(3.0), 9.0))
check("on arrays", allclose(square(x), x ** 2))
check("jit", allclose(jax.jit(square)(x), x ** 2))
check("grad", allclose(jax.grad(square)(np.float32(3.0)), 6.0))
check("no float64", no_float64(square, x))
"""
NUMPY_SQUARE = """
import numpy as np
def square(x):
    return np.square(np.asarray(x))
"""
HONEST = {"value": True, "on arrays": True, "jit": False, "grad": False, "no float64": False}
# What the swap wants answered instead: a traceable twin of the same values, or of other values.
TWINS = {"same values": "jnp.square(x)", "other values": "jnp.square(x) + 0.5"}


def twin(values: str) -> str:
    return f"\nimport jax, jax.numpy as jnp\ndef _twin(x):\n    return {TWINS[values]}\n"


def test_a_numpy_square_scores_what_it_earns(grade):
    _run, result = grade(NUMPY_SQUARE, checks=SQUARE_CHECKS)
    assert scores(result) == HONEST, result
    assert {c["name"]: c["message"] for c in result["checks"]}["jit"].startswith(
        "square raised TracerArrayConversionError"), result


def test_the_runners_modules_cannot_be_imported_to_swap_the_function(grade):
    """The four-line patch: import the runner's answering module, answer transformations with a
    traceable twin. No spelling of the runner's modules imports, even with its folder put back on
    sys.path, so the grade is the honest one."""
    swap = NUMPY_SQUARE + twin("same values") + """
import importlib, sys
sys.path[:0] = ["/opt/playground", "/opt/playground/runner"]
refused = []
for name in ("runner.answers", "executor.runner.answers", "runner", "executor.runner", "answers", "runner.transforms"):
    try:
        answers = importlib.import_module(name)
    except ImportError as exc:
        refused.append(name)  # ModuleNotFoundError; a bare "answers" cannot import its relatives
        continue
    real = answers._function
    answers._function = lambda ns, name, transform: real({**ns, "square": _twin} if transform else ns, name, transform)
print("refused", refused)
"""
    run, result = grade(swap, checks=SQUARE_CHECKS)
    assert run.stdout.startswith("refused [") and run.stdout.count("'") == 12, run.stdout
    assert run.status == "succeeded" and scores(result) == HONEST, result


def test_reassigning_the_runners_modules_found_in_the_process_changes_no_answer(grade):
    """The runner's modules can still be found among sys.modules' values (or with gc): what they
    name is not what answers, which holds its functions in closures built before the code ran."""
    swap = NUMPY_SQUARE + twin("same values") + RUNNER_MODULE + """
answers, transforms = _runner_module("answers"), _runner_module("transforms")
def _swapped(steps):
    return {step: (lambda fn: lambda f, **k: fn(_twin if f is square else f, **k))(fn) for step, fn in steps.items()}
real_bound = transforms.bound
transforms.bound = lambda jax: real_bound(type("J", (), {**{s: getattr(jax, s) for s in ("jacfwd", "tree_util")},
                                                           **_swapped({s: getattr(jax, s) for s in ("jit", "grad")})}))
answers.answerer = lambda ns: (lambda q: {"value": 0})
for step in ("jit", "grad", "vmap"):
    setattr(jax, step, (lambda fn: lambda f, **k: fn(_twin if f is square else f, **k))(getattr(jax, step)))
jax.export.export = (lambda fn: lambda f, **k: fn(jax.jit(_twin), **k))(jax.export.export)
print("patched", jax.jit.__name__)
"""
    run, result = grade(swap, checks=SQUARE_CHECKS)
    assert run.stdout == "patched <lambda>\n", run.stdout  # the patches took, in the student's process
    assert scores(result) == HONEST, result


@pytest.mark.parametrize("values", list(TWINS))
def test_a_gc_walk_that_reaches_the_answering_closure_gains_only_what_the_guide_says(grade, values):
    """docs/CHECKS.md, "What rests on the student's side": code that walks the collector to the
    answering closure and rewrites it can hand over a twin for every transformation and lowering.
    A twin of the same values passes the checks that rest on the module the side hands over (jit,
    grad, no_float64); a twin of other values passes none of them, and the value checks are the
    plain function's either way."""
    swap = NUMPY_SQUARE + twin(values) + ANSWERING + """
_build = _cell(lambda v: getattr(v, "__qualname__", "") == "bound.<locals>.build")
_real_build = _build.cell_contents
_build.cell_contents = lambda f, chain: _real_build(_twin if f is square else f, chain)
_lowering = _cell(lambda v: type(v) is dict and "lower" in v and "call" in v).cell_contents
_real_lower = _lowering["lower"]
_replace_lowering(lambda f, args, kwargs: _real_lower(_twin if f is square else f, args, kwargs))
"""
    run, result = grade(swap, checks=SQUARE_CHECKS)
    assert run.status == "succeeded", run  # the walk found both cells and rewrote them
    if values == "same values":
        assert scores(result) == {"value": True, "on arrays": True, "jit": True, "grad": True, "no float64": True}
    else:
        assert scores(result) == HONEST, result
        messages = {c["name"]: c["message"] for c in result["checks"]}
        assert messages["jit"] == "square gives other values as compiled than called plainly", messages
        assert messages["no float64"] == "what square compiles to does not compute what square returns", messages


def test_code_that_floods_events_while_the_checks_call_it_is_ended(grade):
    """What the code sends while the checks call it is dropped, and the executor's time to drop
    it is not the run's: past MAX_LINES_WHILE_CHECKING lines the run ends."""
    from executor.supervisor import MAX_LINES_WHILE_CHECKING

    flood = WRONG + (
        "\nimport os\n"
        "def square(x):\n"
        "    line = b'{\"type\": \"stdout\", \"text\": \"x\"}\\n'\n"
        "    for _ in range(200):\n"
        "        os.write(3, line * 1000)\n"
        "    return x * x\n")
    run, result = grade(flood, wall_s=30)
    assert run.status == "limit_exceeded", run
    assert f"over {MAX_LINES_WHILE_CHECKING} events" in run.finished["message"], run.finished
    assert run.finished["wall_ms"] < 15_000 and result["score"] <= 2.0, result


def test_a_function_that_sleeps_past_the_checks_time_fails_and_the_run_ends(grade):
    slow = WRONG + "\nimport time\ndef square(x):\n    time.sleep(600)\n"
    run, result = grade(slow, wall_s=3)
    assert run.status == "timed_out", run
    messages = {c["name"]: c["message"] for c in result["checks"]}
    assert messages["square of 3"] == "square did not return in time"
    assert result["score"] == 0 and run.finished["wall_ms"] < 30_000


def test_the_compilation_checks_lower_the_function_themselves(grade):
    checks = """
from jaxplay.grading import check, compile_count, flops_under, max_compilations, no_float64, no_host_callbacks
import numpy as np
x = np.arange(1.0, 4.0, dtype=np.float32)
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(scale, 1, (x, 2.0), (x, 3.0)))
check("cheap", flops_under(1e5, loss, x))
check("no callbacks", no_host_callbacks(loss, x))
check("counts shapes", compile_count(loss, (x,), (np.ones(5, np.float32),)) == 2)
"""
    good = """
import jax, jax.numpy as jnp
@jax.jit
def loss(w):
    return jnp.sum(jnp.sin(w) * w)
scale = jax.jit(lambda w, s: w * s)
"""
    bad = """
import functools, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
@jax.jit
def loss(w):
    jax.debug.print("w = {}", w)
    m = jnp.outer(w, w) @ jnp.ones((w.shape[0], 512)) @ jnp.ones((512, 512))
    return jnp.sum(jnp.sin(w) * w) + 0 * jnp.sum(m)
scale = functools.partial(jax.jit, static_argnums=1)(lambda w, s: w * s)  # one compilation per s
"""
    _run, result = grade(good, checks=checks)
    assert all(scores(result).values()), result
    _run, result = grade(bad, checks=checks)
    assert scores(result) == {"no float64": False, "compiled once": False, "cheap": False, "no callbacks": False,
                              "counts shapes": True}, result


def test_a_lowering_that_is_not_the_function_fails_the_compilation_checks(grade):
    """The student's side may hand over any module: the checker runs it and requires it to
    compute what the function returns."""
    checks = """
from jaxplay.grading import check, no_float64
import numpy as np
check("no float64", no_float64(loss, np.arange(3.0, dtype=np.float32)))
"""
    forged = """
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
def loss(w):
    return jnp.sum(jnp.asarray(w, jnp.float64) ** 3)
cheap = jax.export.export(jax.jit(lambda w: jnp.sum(w)))(jax.ShapeDtypeStruct((3,), jnp.float32)).serialize()
""" + ANSWERING + """
_replace_lowering(lambda f, args, kwargs: cheap)
"""
    _run, result = grade(forged, checks=checks)
    message = {c["name"]: c["message"] for c in result["checks"]}["no float64"]
    assert message == "what loss compiles to does not compute what loss returns", result


COMPILED_CHECKS = """
from jaxplay.grading import allclose, check, flops_under, max_compilations, no_float64, no_host_callbacks
import numpy as np
x = np.arange(3.0, dtype=np.float32) + 0.5
check("value", allclose(loss(x), float(np.sum(x.astype(np.float64) ** 2)), rtol=1e-4))
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(loss, 1, (x,), (x + 1,)))
check("cheap", flops_under(100, loss, x))
check("no callbacks", no_host_callbacks(loss, x))
"""
# float64, a host callback and an unused matmul: only the value is right.
COSTLY = """
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
@jax.jit
def loss(w):
    jax.debug.print("w = {}", w)
    m = jnp.ones((60, 60)) @ jnp.ones((60, 60))
    return jnp.sum(jnp.asarray(w, jnp.float64) ** 2) + 0 * jnp.sum(m)
""" + ANSWERING
FORGED_LOWERINGS = {
    "a text that says nothing": '_replace_lowering(lambda f, a, k: {"text": "module @m { }"})',
    "a module that returns the check's answer whatever it is given": """
def _constant(f, args, kwargs):
    value = np.asarray(f(*args), np.float32)
    const = jax.jit(lambda w: jnp.zeros((), jnp.float32) + value)
    return jax.export.export(const)(*[np.asarray(v, np.float32) for v in args]).serialize()
_replace_lowering(_constant)
""",
    "a module corrupted to break the parser": """
import random
def _corrupt(f, args, kwargs):
    blob = bytearray(jax.export.export(jax.jit(lambda w: jnp.sum(w ** 2)))(*args).serialize())
    rng = random.Random(26)
    for _ in range(8):
        blob[rng.randrange(len(blob) // 3, len(blob))] = rng.randrange(256)
    return bytes(blob)
_replace_lowering(_corrupt)
""",
}


@pytest.mark.parametrize("forgery", list(FORGED_LOWERINGS))
def test_a_forged_lowering_passes_no_compilation_check(grade, forgery):
    run, result = grade(COSTLY + FORGED_LOWERINGS[forgery], checks=COMPILED_CHECKS)
    assert run.status == "succeeded", run  # the forgery was put in place (gc found the closure)
    assert scores(result) == {"value": True, "no float64": False, "compiled once": False, "cheap": False,
                              "no callbacks": False}, (forgery, result)
    assert result["outcome"] == "checked", result  # the checks ran to their end, in a checker that did not crash


def test_answers_no_json_carries_fail_one_check_only(grade):
    checks = """
from jaxplay.grading import allclose, check
check("text", label() == "grad")
check("nan", allclose(nan(), 1.0))
check("square", allclose(square(3.0), 9.0))
"""
    student = """
import math
label = lambda: "grad" + chr(0xdcff)
nan = lambda: math.nan
square = lambda x: x * x
"""
    _run, result = grade(student, checks=checks)
    assert scores(result) == {"text": False, "nan": False, "square": True}, result
    assert result["outcome"] == "checked" and "executor failed" not in result["error"], result


def test_a_name_cannot_make_the_checker_import_what_it_likes(grade):
    student = WRONG + ANSWERING + """
_take_over(lambda q, real: {"kind": "module", "value": "runner.__main__"}
           if q.get("op") == "get" and q.get("name") == "square" else real(q))
"""
    _run, result = grade(student)
    assert {c["name"]: c["message"] for c in result["checks"]}["square of 3"] == \
        "your code does not define square", result
    assert "usage:" not in result["log"]


# Whose fault: a check that crashes is the instructor's, never the student's grade -------------------

CRASHED = "this check could not run; your instructor has been told"


def test_a_helper_that_crashes_leaves_its_checks_unrun_and_its_names_are_never_the_students(grade):
    checks = """
from jaxplay.grading import allclose, check
expected = undefined_helper(3)
check("value", allclose(square(3.0), expected), 2)
with check("block", points=1):
    assert allclose(square(2.0), expected - 5.0)
check("plain", allclose(square(1.0), 1.0))
"""
    # The student's own `expected` never stands in for the one the crashed line would have made.
    _run, result = grade("def square(x):\n    return x * x\nexpected = 9.0\n", checks=checks)
    by_name = {c["name"]: c for c in result["checks"]}
    assert {n: (c["passed"], c["crashed"]) for n, c in by_name.items()} == {
        "value": (False, True), "block": (False, True), "plain": (True, False)}, result
    assert by_name["value"]["message"] == by_name["block"]["message"] == CRASHED
    assert result["needs_regrade"] is True and (result["score"], result["max_score"]) == (1.0, 4.0)
    assert "undefined_helper" in result["error"] and "'expected' is not defined" in result["error"]
    assert "Provisional" in result["message"]


def test_a_checks_own_exception_could_not_run_and_the_students_stay_theirs(grade):
    checks = """
from jaxplay.grading import allclose, check
check("own code", allclose(square(3.0), 9.0) and len(9.0) > 0, 2)
check("their code", allclose(square(3.0), 9.0), 1)
with check("asserted", points=1):
    assert float(square(2.0)) == 4.0, "square(2) should be 4"
"""
    _run, result = grade("def square(x):\n    return x * x\n", checks=checks)
    assert {c["name"]: (c["passed"], c["crashed"]) for c in result["checks"]} == {
        "own code": (False, True), "their code": (True, False), "asserted": (True, False)}, result
    assert result["needs_regrade"] is True and "TypeError" in result["error"]

    _run, result = grade("def square(x):\n    return {}[x]\n", checks=checks)
    assert {c["message"] for c in result["checks"]} == {"square raised KeyError at line 2 of your code"}, result
    assert result["needs_regrade"] is False and not any(c["crashed"] for c in result["checks"])

    _run, result = grade("def square(x):\n    return x + 1\n", checks=checks)
    assert {c["name"]: c["message"] for c in result["checks"]}["asserted"] == "square(2) should be 4"
    assert result["needs_regrade"] is False
