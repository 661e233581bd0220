"""An assignment whose hidden checks transform the student's function, graded on the live stack
(daphne, the recorder, a sandboxed CPU executor) through the public API: a correct submission
earns every point, one JAX cannot trace earns none and is told its own line, and nothing of the
checks reaches the student."""

from __future__ import annotations

from courses.actions.assignments import do_create_assignment

from .test_grading import submit, wait_graded

CHECKS = """
from jaxplay.grading import allclose, check
import jax
import numpy as np
SECRET = 0.3
x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
check("grad", allclose(jax.grad(f)(SECRET), np.sin(0.6), rtol=1e-4))
check("vmap", allclose(jax.vmap(f)(x), np.sin(x) ** 2, rtol=1e-4))
check("jit", allclose(jax.jit(f)(x), np.sin(x) ** 2, rtol=1e-4))
check("hessian", allclose(jax.hessian(f)(SECRET), 2 * np.cos(0.6), rtol=1e-4))
check("make_jaxpr", "sin" in str(jax.make_jaxpr(f)(SECRET)))
"""
CORRECT = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) ** 2\n"
NUMPY = "import numpy as np\ndef f(x):\n    return np.sin(x) ** 2\n"


def make_assignment(course):
    return do_create_assignment(course, title="Transformations", description="Write `f`.", starter_code="",
                                checks=CHECKS, device="cpu", limits={"wall_s": 30})


def test_checks_that_transform_the_students_function_give_a_correct_submission_every_point(
        live_stack, course, student_client, instructor_client):
    assignment = make_assignment(course)
    right, numpy = submit(student_client, assignment, CORRECT), submit(student_client, assignment, NUMPY)
    graded = wait_graded(right, numpy)
    assert (graded[right].score, graded[right].max_score) == (5.0, 5.0), (graded[right].checks, graded[right].error)
    assert all(c["passed"] for c in graded[right].checks)
    assert graded[numpy].score == 0.0
    body = student_client.get(f"/api/submissions/{numpy}").json()
    assert {c["message"] for c in body["checks"]} == {
        "f raised TracerArrayConversionError at line 3 of your code"}
    assert "SECRET" not in str(body) and "np.sin(0.6)" not in str(body)
    # Every one of them is the student's failure: nothing for the instructor to fix.
    assert not instructor_client.get(f"/api/submissions/{numpy}").json()["error"]
