"""Hidden checks that transform the student's function, as a JAX course writes them
(``jax.grad(f)(0.3)``, ``jax.vmap(f)(x)``, ``jax.jit(f)(x)``, ``jax.hessian(f)(0.3)``,
``jax.make_jaxpr(f)(0.3)``...), graded in the real sandbox: the checker never runs the student's
code, the student's JAX builds each transformation (runner/transforms.py, runner/standin.py),
and what comes back is held against the function's own values, so a side that answers plain
calls for transformations earns nothing."""

from __future__ import annotations

import pytest

from executor.local import grade_local

CHECKS = """
from jaxplay.grading import allclose, check
import jax, jax.numpy as jnp
import numpy as np
x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
check("grad", allclose(jax.grad(f)(0.3), np.sin(0.6), rtol=1e-4))
check("vmap", allclose(jax.vmap(f)(x), np.sin(x) ** 2, rtol=1e-4))
check("jit", allclose(jax.jit(f)(x), np.sin(x) ** 2, rtol=1e-4))
check("hessian", allclose(jax.hessian(f)(0.3), 2 * np.cos(0.6), rtol=1e-4))
check("make_jaxpr", "sin" in str(jax.make_jaxpr(f)(0.3)))
"""
MORE_CHECKS = """
from jaxplay.grading import allclose, check
import jax, jax.numpy as jnp
import numpy as np
x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
w, xs = np.ones((5, 3), np.float32), np.ones((2, 5), np.float32)
check("value_and_grad", allclose(jax.value_and_grad(f)(0.3), (np.sin(0.3) ** 2, np.sin(0.6)), rtol=1e-4))
check("jacfwd", allclose(jax.jacfwd(f)(x), np.diag(np.sin(2 * x)), rtol=1e-4, atol=1e-6))
check("jacrev", allclose(jax.jacrev(f)(x), np.diag(np.sin(2 * x)), rtol=1e-4, atol=1e-6))
check("grad argnums", allclose(jax.grad(loss, argnums=0)(w, xs), 2 * xs.T @ (xs @ w), rtol=1e-4))
check("jit of grad", allclose(jax.jit(jax.grad(f))(0.3), np.sin(0.6), rtol=1e-4))
check("vmap of grad", allclose(jax.vmap(jax.grad(f))(x), np.sin(2 * x), rtol=1e-4, atol=1e-6))
check("pmap", allclose(jax.pmap(f)(x[:2]), np.sin(x[:2]) ** 2, rtol=1e-4))
check("eval_shape", jax.eval_shape(f, jax.ShapeDtypeStruct((7,), jnp.float32)).shape == (7,))
check("lowering", "sine" in jax.jit(f).lower(x).as_text())
check("jaxpr equations", [e.primitive.name for e in jax.make_jaxpr(f)(0.3).eqns][:1] == ["sin"])
check("own function, grad", allclose(jax.grad(lambda t: 3 * f(t))(0.3), 3 * np.sin(0.6), rtol=1e-4))
check("own function, jit of grad", allclose(jax.jit(jax.grad(lambda t: 3 * f(t)))(0.3), 3 * np.sin(0.6), rtol=1e-4))
check("own function, hessian", allclose(jax.hessian(lambda t: f(t) + t)(0.3), 2 * np.cos(0.6), rtol=1e-3))
check("own function, vmap", allclose(jax.vmap(lambda t: f(t) + 1)(x), np.sin(x) ** 2 + 1, rtol=1e-4))
check("own function, sum", allclose(jax.grad(lambda v: jnp.sum(f(v)))(x), np.sin(2 * x), rtol=1e-4, atol=1e-6))
"""
CORRECT = """
import jax.numpy as jnp
def f(x):
    return jnp.sin(x) ** 2
def loss(w, x):
    return jnp.sum((x @ w) ** 2)
"""
# Right values, but NumPy: JAX cannot trace it, as it could not on the student's own machine.
NUMPY = """
import numpy as np
def f(x):
    return np.sin(x) ** 2
def loss(w, x):
    return np.sum((x @ w) ** 2)
"""
# Untraceable code whose runner answers every transformation with the plain function, and hands
# over a module of a constant when asked to lower it.
FORGED = NUMPY + """
import importlib
answers = importlib.import_module("runner.answers")
real_function, real_lower = answers._function, answers._lower
answers._function = lambda namespace, name, transform: (real_function(namespace, name, None)[0], None)
answers._lower = lambda f, args, kwargs: real_lower(lambda *a, **k: np.float32(0.0873322), args, kwargs)
"""


@pytest.fixture(scope="module")
def grade(launcher):
    def grade_(code: str, checks: str) -> dict:
        _, result = grade_local(code, checks, launcher=launcher, limits=launcher.limits.clamp({"wall_s": 60}))
        return result

    return grade_


def messages(result: dict) -> dict:
    return {c["name"]: (c["passed"], c["message"]) for c in result["checks"]}


def test_a_correct_submission_passes_checks_that_transform_its_function(grade):
    result = grade(CORRECT, CHECKS)
    assert messages(result) == dict.fromkeys(["grad", "vmap", "jit", "hessian", "make_jaxpr"], (True, "")), result
    assert (result["score"], result["max_score"]) == (5.0, 5.0)
    assert result["error"] == "", result["error"]


def test_every_transformation_and_the_checks_own_functions_of_it_work(grade):
    result = grade(CORRECT, MORE_CHECKS)
    failed = {name: m for name, (ok, m) in messages(result).items() if not ok}
    assert not failed, (failed, result["log"][-3000:])
    assert result["score"] == result["max_score"] == 15.0


def test_a_function_jax_cannot_trace_fails_with_the_students_own_line(grade):
    result = grade(NUMPY, CHECKS)
    seen = messages(result)
    for name in ("grad", "vmap", "jit", "hessian", "make_jaxpr"):
        passed, message = seen[name]
        assert not passed and message == "f raised TracerArrayConversionError at line 4 of your code", (name, message)
    assert result["score"] == 0.0


def test_a_side_that_answers_transformations_with_plain_calls_earns_nothing(grade):
    result = grade(FORGED, CHECKS + 'check("plain", allclose(f(x), np.sin(x) ** 2, rtol=1e-4))\n')
    seen = messages(result)
    assert seen["plain"] == (True, "")  # its plain values are right
    for name in ("grad", "vmap", "jit", "hessian"):
        assert not seen[name][0], (name, seen[name])
    assert seen["jit"][1] == "f gives other values as compiled than called plainly"
    assert seen["grad"][1] == "what f compiles to does not compute what f returns"
    assert result["score"] == 1.0


def test_a_wrong_function_fails_the_transformed_checks_as_wrong_values(grade):
    result = grade(CORRECT.replace("jnp.sin(x) ** 2", "jnp.cos(x) ** 2"), CHECKS)
    seen = messages(result)
    for name in ("grad", "vmap", "jit", "hessian"):
        assert seen[name] == (False, "the values differ from the expected ones"), (name, seen[name])
    assert seen["make_jaxpr"] == (False, "")


def test_a_student_error_inside_the_checks_own_jitted_function_is_the_students(grade):
    # Traceable (jax.eval_shape of it works), but raising when called on values: under the check's
    # jit the value is asked through a host callback, and JAX raises its own error in its place.
    code = "import jax\ndef g(x):\n    if isinstance(x, jax.core.Tracer):\n        return x * 2.0\n" \
           "    raise KeyError('no')\n"
    checks = "from jaxplay.grading import check\nimport jax\nimport numpy as np\n" \
             "check('jitted', jax.jit(lambda t: g(t) + 1.0)(np.float32(0.3)) > 0)\n" \
             "with check('block'):\n    jax.jit(lambda t: g(t) + 1.0)(np.float32(0.3))\n"
    result = grade(code, checks)
    assert messages(result) == {"jitted": (False, "g raised KeyError at line 5 of your code"),
                                "block": (False, "g raised KeyError at line 5 of your code")}, result
