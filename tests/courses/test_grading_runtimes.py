"""Grading on an older runtime through the live stack: a course pinned to JAX 0.4.38 keeps its
grades when the site upgrades, since its submissions run, and its checks grade them, on a worker
of that runtime (tests/conftest.py's old_runtime_worker, started for this module alone: the
other grading tests count the CPU workers online)."""

from __future__ import annotations

import pytest

from courses.actions.assignments import do_create_assignment
from playground.models import Run, RunEvent
from tests.conftest import OLD_RUNTIME

from .helpers import CHECKS, CORRECT, WRONG
from .test_grading import IR_BAD, IR_CHECKS, IR_GOOD, assert_nothing_leaked, submit, wait_graded, wait_recorded

pytestmark = pytest.mark.usefixtures("old_runtime_worker")


@pytest.mark.parametrize("code, score", [(CORRECT, 5.0), (WRONG, 3.0)])
def test_an_assignment_on_an_older_runtime_is_graded_there(live_stack, course, student_client, code, score):
    old = do_create_assignment(course, title="Squares, old JAX", checks=CHECKS, device="cpu", runtime=OLD_RUNTIME)
    submission_id = submit(student_client, old, code)
    graded = wait_graded(submission_id)[submission_id]
    assert graded.score == score and graded.max_score == 5.0, graded.checks
    # The grade can land before the run's last events are stored: read them once they all are.
    wait_recorded(graded.run_id)
    run = Run.objects.get(pk=graded.run_id)
    started = RunEvent.objects.get(run=run, type="started").data
    assert run.runtime == OLD_RUNTIME and started["runtime"] == OLD_RUNTIME and started["jax_version"] == "0.4.38"
    assert_nothing_leaked(student_client, submission_id)


def test_gradient_and_compilation_checks_on_an_older_runtime(live_stack, course, student_client):
    ir = do_create_assignment(course, title="Compiled, old JAX", checks=IR_CHECKS, runtime=OLD_RUNTIME)
    good, bad = submit(student_client, ir, IR_GOOD), submit(student_client, ir, IR_BAD)
    graded = wait_graded(good, bad)
    assert {c["name"]: c["passed"] for c in graded[good].checks} == {
        "gradient": True, "no float64": True, "compiled once": True, "under a FLOP budget": True,
        "no host callbacks": True, "compiled at all": True}, graded[good].checks
    assert {c["name"]: c["passed"] for c in graded[bad].checks} == {
        "gradient": False, "no float64": False, "compiled once": False, "under a FLOP budget": False,
        "no host callbacks": False, "compiled at all": True}, graded[bad].checks
