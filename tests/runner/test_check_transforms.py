"""Hidden checks that transform the student's function, as a JAX course writes them
(``jax.grad(f)(0.3)``, ``jax.vmap(f)(x)``, ``jax.jit(f)(x)``, ``jax.hessian(f)(0.3)``,
``jax.make_jaxpr(f)(0.3)``...), graded in the real sandbox: the checker never runs the student's
code, the student's JAX builds each transformation (runner/transforms.py, runner/standin.py),
and what comes back is held against the function's own values, so a side that answers plain
calls for transformations earns nothing."""

from __future__ import annotations

import pytest

from executor.local import grade_local

from .reach import ANSWERING

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
FORGED = NUMPY + ANSWERING + """
_function = _answering("function")
real_function = _function.cell_contents
_function.cell_contents = lambda name, transform: (real_function(name, None)[0], None)
real_lower = _cell(lambda v: type(v) is dict and "lower" in v and "call" in v).cell_contents["lower"]
_replace_lowering(lambda f, args, kwargs: real_lower(lambda *a, **k: np.float32(0.0873322), args, kwargs))
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


# Untraceable code whose runner answers every question itself: a module of a host callback for
# each lowering (which the analyst cannot run), values from finite differences for derivatives.
FORGED_WITH_CALLBACKS = NUMPY + """
""" + ANSWERING + """
transforms, values = _runner_module("transforms"), _runner_module("values")
TEXT = ('module @jit_f { func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {\\n'
        '  %0 = stablehlo.custom_call @xla_python_cpu_callback(%arg0) : (tensor<f32>) -> tensor<f32>\\n'
        '  return %0 : tensor<f32> } }')
def D(x, k):
    return np.sin(x) ** 2 if k == 0 else (D(x + 1e-2, k - 1) - D(x - 1e-2, k - 1)) / 2e-2
def forged(q, real):
    if q.get("op") == "get" or q.get("name") != "f":
        return real(q)
    t = q.get("transform")
    chain = transforms.clean_chain(values.decode(t) if isinstance(t, (dict, list)) else t)
    order = sum({"grad": 1, "hessian": 2}.get(s, 0) for s, _ in chain)
    if q.get("op") == "lower":
        return {"value": values.encode({"text": TEXT})}
    x = np.asarray(values.decode(q["args"])[0], dtype=np.float64)
    return {"value": values.encode(np.asarray(D(x, order), dtype=np.float32))}
_take_over(forged)
"""
# Answers made to crash the checker's own code, so that failures would be booked as the checks'.
CRASHING = CORRECT + """
""" + ANSWERING + """
transforms, values = _runner_module("transforms"), _runner_module("values")
def crashing(q, real):
    if q.get("op") == "get" or q.get("name") != "f":
        return real(q)
    t = q.get("transform")
    steps = [s for s, _ in transforms.clean_chain(values.decode(t) if isinstance(t, (dict, list)) else t)]
    if q.get("op") == "lower":
        return {"value": values.encode({"text": ""})}
    if q.get("op") == "jaxpr":
        return {"value": {"$d": [["text", "sin"], ["eqns", 5]]}}
    return {"value": "abc" if steps == ["grad"] else 10 ** 400}
_take_over(crashing)
"""


def test_a_side_that_hands_over_host_callbacks_for_every_lowering_earns_nothing(grade):
    result = grade(FORGED_WITH_CALLBACKS, CHECKS)
    seen = messages(result)
    for name in ("grad", "vmap", "jit", "hessian"):
        assert seen[name] == (False, "f calls back to the host (jax.debug.print, a callback), so the checks cannot "
                                     "run what it compiles to"), (name, seen[name])


def test_answers_made_to_crash_the_checks_are_the_students_failure_not_a_regrade(grade):
    result = grade(CRASHING, CHECKS + "check('own function', allclose(jax.grad(lambda t: 3 * f(t))(0.3), 1.0))\n")
    assert not result["needs_regrade"], result["checks"]
    assert not any(c["crashed"] for c in result["checks"]), result["checks"]
    assert result["score"] == 0.0


def test_a_student_value_where_a_function_goes_is_the_students_failure(grade):
    result = grade("f = 0.5\n", CHECKS)
    assert not result["needs_regrade"]
    assert messages(result)["grad"] == (False, "f is not a function, so jax.grad cannot take it")


def test_a_line_number_is_a_number_not_a_channel(grade):
    code = "def f(x):\n    raise ValueError\n" + ANSWERING + \
           "_error = _answering('error')\nreal = _error.cell_contents\n" \
           "_error.cell_contents = lambda exc: {**real(exc), 'line': 10 ** 300}\n"
    result = grade(code, "from jaxplay.grading import check\ncheck('call', f(1.0) == 1)\n")
    assert messages(result) == {"call": (False, "f raised ValueError")}


def test_a_student_value_called_by_a_check_is_the_students_failure(grade):
    result = grade("square = 9\n", "from jaxplay.grading import allclose, check\n"
                                   "check('square of 3', allclose(square(3.0), 9.0))\n")
    assert not result["needs_regrade"]
    assert messages(result) == {"square of 3": (False, "square is not a function")}


def test_the_checks_own_function_cannot_be_passed_with_finite_differences_of_untraceable_code(grade):
    # Plain values and "derivative" answers from NumPy, and an honest lowering (of NumPy: it fails).
    code = NUMPY + """
""" + ANSWERING + """
transforms, values = _runner_module("transforms"), _runner_module("values")
def D(x, k):
    return np.sin(x) ** 2 if k == 0 else (D(x + 1e-2, k - 1) - D(x - 1e-2, k - 1)) / 2e-2
def forged(q, real):
    t = q.get("transform")
    chain = transforms.clean_chain(values.decode(t) if isinstance(t, (dict, list)) else t)
    if q.get("op") != "call" or not chain or chain[-1][0] != "derivative":
        return real(q)
    order = int(chain[-1][1]["order"])
    value = np.asarray(D(np.asarray(values.decode(q["args"])[0], dtype=np.float64), order), dtype=np.float32)
    for _ in range(order):
        value = (value,)
    return {"value": values.encode(value)}
_take_over(forged)
"""
    checks = "from jaxplay.grading import allclose, check\nimport jax\nimport numpy as np\n" \
             "check('own grad', allclose(jax.grad(lambda t: 3 * f(t))(0.3), 3 * np.sin(0.6), rtol=1e-3))\n"
    result = grade(code, checks)
    assert messages(result) == {"own grad": (False, "f raised TracerArrayConversionError at line 4 of your code")}


def test_starter_code_that_returns_none_fails_the_checks_own_function_as_the_students(grade):
    checks = "from jaxplay.grading import allclose, check\nimport jax\nimport numpy as np\n" \
             "check('own grad', allclose(jax.grad(lambda t: 3 * f(t))(0.3), 1.0))\n"
    result = grade("def f(x):\n    ...\n", checks)
    assert not result["needs_regrade"], result["checks"]
    assert not result["checks"][0]["passed"] and not result["checks"][0]["crashed"], result["checks"]


def test_a_result_whose_dict_keys_cannot_be_sorted_fails_as_the_students(grade):
    code = CORRECT + """
""" + ANSWERING + """
transforms, values = _runner_module("transforms"), _runner_module("values")
def unsortable(q, real):
    if q.get("op") == "call" and q.get("transform"):
        return {"value": {"$d": [[1, 0.0], ["a", 0.0]]}}
    return real(q)
_take_over(unsortable)
"""
    result = grade(code, CHECKS)
    assert not result["needs_regrade"], result["checks"]
    assert not any(c["passed"] or c["crashed"] for c in result["checks"] if c["name"] in ("grad", "hessian"))
