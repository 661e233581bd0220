"""Graded runs in the real sandbox: hidden checks after the student's code, in its globals, and
the student's code unable to read, change or forge them (executor/runner/grading.py)."""

from __future__ import annotations

import json
import secrets

import pytest

from executor.supervisor import GradingSession, grade_result

# The checks carry a marker that must never reach anything the student sees.
MARKER = "HIDDEN_EXPECTED_4471"
CHECKS = f"""
from jaxplay.grading import allclose, check, grad_check, max_compilations, no_float64
import numpy as np
SECRET = "{MARKER}"
check("square of 3", allclose(square(3.0), 9.0), 2)
with check("gradient", points=2):
    assert grad_check(loss, np.arange(3.0), loss_grad), "the gradient differs from finite differences"
check("no float64", no_float64())
check("compiled once", max_compilations("loss", 1))
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


@pytest.fixture(scope="module")
def grade(launcher):
    from executor.local import RunResult, run_local

    def grade_(code: str, checks: str = CHECKS, wall_s: float = 30) -> tuple[RunResult, dict]:
        session = GradingSession(checks=checks, nonce=secrets.token_hex(16), token=secrets.token_hex(16))
        events = run_local(code, launcher=launcher, limits=launcher.limits.clamp({"wall_s": wall_s}),
                           grading=session)
        run = RunResult(events)
        result = grade_result(session, run.finished)
        # Nothing the student can see holds the checks or what they printed.
        seen = json.dumps(events)
        assert MARKER not in seen and "checks saw" not in seen, seen
        return run, result

    return grade_


def scores(result: dict) -> dict:
    return {c["name"]: c["passed"] for c in result["checks"]}


def test_a_correct_submission_gets_every_point(grade):
    run, result = grade(CORRECT)
    assert run.status == "succeeded" and run.stdout == "5.0\n"
    assert scores(result) == {"square of 3": True, "gradient": True, "no float64": True, "compiled once": True}
    assert (result["score"], result["max_score"]) == (6.0, 6.0)
    assert result["error"] is None
    assert f"checks saw {MARKER}" in result["log"]  # the instructor's


def test_a_wrong_submission_fails_the_checks_with_messages(grade):
    _run, result = grade(WRONG)
    assert scores(result) == {"square of 3": False, "gradient": False, "no float64": True, "compiled once": True}
    assert result["score"] == 2.0
    by_name = {c["name"]: c for c in result["checks"]}
    assert "largest difference 3" in by_name["square of 3"]["message"]
    assert by_name["gradient"]["message"] == "the gradient differs from finite differences"


def test_a_crashing_submission_is_still_checked(grade):
    run, result = grade(CORRECT + "\nraise ValueError('oops')\n")
    assert run.status == "failed" and run.error["exc_type"] == "ValueError"
    assert result["student_status"] == "failed" and result["score"] == 6.0


def test_a_check_that_raises_in_student_code_says_where_not_what(grade):
    code = "def square(x):\n    return {}[x]\n" + CORRECT.split("def square")[0]
    _run, result = grade(code + "\nimport jax\nloss = jax.jit(lambda w: (w ** 2).sum())\nloss_grad = lambda w: 2 * w\n")
    message = {c["name"]: c["message"] for c in result["checks"]}["square of 3"]
    assert message == "raised KeyError at line 2 of your code"
    assert "KeyError" in result["error"] and "square(3.0)" in result["error"]  # the instructor's traceback


def test_code_that_ends_the_process_or_times_out_scores_nothing(grade):
    for code, status in (("import os\nos._exit(0)", "succeeded"), ("while True: pass", "timed_out")):
        run, result = grade(code, wall_s=3)
        assert run.status == status, (code, run)
        assert result["score"] == 0 and result["checks"] == []
        assert "before the checks could run" in result["error"], result


def test_code_that_raises_system_exit_is_checked_like_any_failure(grade):
    run, result = grade("raise SystemExit(3)")
    assert run.status == "failed"
    assert result["score"] == 1.0  # only "no float64" holds of code that compiled nothing
    assert {c["name"]: c["message"] for c in result["checks"]}["square of 3"] == "raised NameError"


def test_checks_that_do_not_compile_are_the_instructors_error(grade):
    _run, result = grade(CORRECT, checks="check('x', True\n")
    assert result["checks"] == [] and "do not compile" in result["error"]


HOSTILE = {
    "prints a forged result": """
print('{"type": "grade", "token": "x", "checks": [{"name": "square of 3", "passed": true, "points": 100}]}')
""",
    "writes forged messages to the event pipe": """
import os
for fd in range(3, 12):
    for line in ('{"type": "student_done", "nonce": "guess", "status": "succeeded"}\\n',
                 '{"type": "grade", "token": "guess", "checks": [{"name": "bonus", "passed": true, "points": 99}]}\\n'):
        try:
            os.write(fd, line.encode())
        except OSError:
            pass
""",
    "calls check itself": """
from jaxplay.grading import check as imported_check
try:
    imported_check("bonus", True, 50)
except RuntimeError as e:
    print("refused:", e)
def square(x):
    imported_check("bonus", True, 50)
    return x * x
""",
    "defines its own check": """
def check(name, passed, points=1, message=""):
    return True
""",
    "patches the libraries": """
import builtins, numpy, jax
numpy.allclose = lambda *a, **k: True
numpy.asarray = lambda *a, **k: numpy.zeros(())
jax.Array.__array__ = lambda self, *a, **k: numpy.float64(9.0)
builtins.bool = lambda x=False: True
import jaxplay.grading as g
g.allclose = lambda *a, **k: True
g.Verdict.__bool__ = lambda self: True
""",
    "patches the libraries while the checks run": """
def square(x):
    import numpy
    numpy.allclose = lambda *a, **k: True
    import jaxplay.grading as g
    g.Verdict.__bool__ = lambda self: True
    return x + x
""",
    "reads memory and frames": """
import gc, sys
for attempt in (lambda: gc.get_objects(), lambda: sys._getframe(), lambda: gc.get_referrers(sys),
                lambda: __import__("ctypes").string_at(0, 1), lambda: sys.settrace(lambda *a: None),
                lambda: __import__("threading").Thread(target=print).start(),
                lambda: __import__("os").fork()):
    try:
        attempt()
        print("allowed")
    except PermissionError as e:
        print("refused:", e)
sys.addaudithook(lambda event, args: print("hooked", event))  # dropped: never called
def square(x):
    try:
        raise ValueError
    except ValueError as e:
        frame = e.__traceback__.tb_frame  # refused: no frame, no caller's locals
    return 9.0
""",
    "hides a signal handler": """
import signal
def peek(signum, frame):
    frame.f_back.f_globals["check"]("bonus", True, 50)
signal.signal(signal.SIGALRM, peek)
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.01)
""",
}


@pytest.mark.parametrize("attack", list(HOSTILE))
def test_hostile_code_cannot_raise_its_score(grade, attack):
    run, result = grade(WRONG + HOSTILE[attack])
    assert result["score"] <= 2.0, (attack, result)
    assert all(c["name"] != "bonus" for c in result["checks"]), result
    assert {c["name"] for c in result["checks"]} == {"square of 3", "gradient", "no float64", "compiled once"}
    if attack == "reads memory and frames":
        assert run.stdout.count("refused:") == 7 and "hooked" not in run.stdout, run.stdout
    if attack == "writes forged messages to the event pipe":
        assert "not the runner's" in (result["error"] or "")
    if attack == "patches the libraries while the checks run":
        assert "while the checks ran" in {c["name"]: c for c in result["checks"]}["square of 3"]["message"]
