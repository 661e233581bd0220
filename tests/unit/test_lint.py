"""Problems as you type (playground/actions/lint.py): ruff's pyflakes rules on the code as the
analyser reads it, with positions in the code as written."""

from __future__ import annotations

import asyncio

from playground.actions.lint import do_lint


def lint(code: str) -> list[dict]:
    return asyncio.run(do_lint(code))["problems"]


def by_code(problems: list[dict]) -> dict[str, dict]:
    return {p["code"]: p for p in problems}


def test_undefined_unused_and_used_before_assignment():
    found = by_code(lint("import os\nprint(undefined_name)\nprint(y)\ny = 1\n"))
    assert found["F401"]["message"] == "`os` imported but unused" and found["F401"]["unnecessary"]
    assert found["F401"]["severity"] == "warning"
    assert found["F821"]["line"] == 2 and found["F821"]["column"] == 7 and found["F821"]["end_column"] == 21
    assert found["used-before-assignment"]["line"] == 3
    assert "first assigned on line 4" in found["used-before-assignment"]["message"]


def test_a_syntax_error_is_marked_where_it_is():
    (first, *_) = lint("def f(:\n    pass\n")
    assert first["code"] == "syntax" and first["line"] == 1 and first["severity"] == "error"
    assert first["message"].startswith("SyntaxError: ")


def test_timeit_and_shell_lines_are_understood():
    # The names a %timeit line uses count as used; its own undefined name is marked in place.
    found = lint("import numpy as np\n%timeit np.sum(missing)\n!pip install optax\n")
    assert [(p["code"], p["line"], p["column"]) for p in found] == [("F821", 2, len("%timeit np.sum(") + 1)]


def test_clean_code_has_no_problems_and_names_used_in_functions_later_are_fine():
    assert lint("import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) + w\n\nw = 2\nprint(f(1))\n") == []


def test_odd_bytes_and_deep_nesting_answer_without_failing():
    assert isinstance(lint("\x00\x01 "), list)
    assert isinstance(lint("x = " + "[" * 5000 + "]" * 5000), list)
