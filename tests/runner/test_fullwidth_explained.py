"""Full-width punctuation a Chinese input method leaves in code, explained: Python refuses
``print（1）`` before anything runs, and the error names the character, its code point, its line
and column as the editor counts them, and the half-width character Python needs. Every
explanation comes with the template and args it was made from, and they make it again."""

from __future__ import annotations

import pytest

from executor.runner import explain


def explained(r) -> dict:
    """The run's error, after checking that its explanation is its template filled."""
    assert r.status == "failed", r.events
    error = r.error
    template, args = error["explanation_template"], error["explanation_args"]
    assert template in explain.TEMPLATES
    assert error["explanation"] == template.format(**args), error
    return error


def test_a_full_width_parenthesis_is_named_with_its_place_and_the_half_width_one(run):
    error = explained(run("print（1）\n"))
    assert error["exc_type"] == "SyntaxError" and error["line"] == 1
    assert error["explanation"].startswith("Line 1, column 6: '（' (U+FF08) is a full-width parenthesis; "
                                           "Python only reads the half-width '('.")
    assert "input method" in error["explanation"] and "quick fix" in error["explanation"]
    assert error["explanation_template"] == explain.FULL_WIDTH["parenthesis"]
    assert error["explanation_args"] == {"line": 1, "column": 6, "char": "（", "code_point": "U+FF08", "ascii": "("}


def test_a_full_width_space_is_named_by_its_code_point(run):
    error = explained(run("x = 1\u3000+ 2\n"))
    assert error["explanation"].startswith("Line 1, column 6: there is a full-width space (U+3000); "
                                           "Python only reads the half-width space.")
    assert error["explanation_args"] == {"line": 1, "column": 6, "code_point": "U+3000"}


def test_a_full_width_comma_inside_a_call_on_a_later_line(run):
    error = explained(run("x = 1\nprint(x，2)\n"))
    assert error["line"] == 2
    assert error["explanation"].startswith("Line 2, column 8: '，' (U+FF0C) is a full-width comma; "
                                           "Python only reads the half-width ','.")


@pytest.mark.parametrize(("code", "line", "column", "kind", "char"), [
    ("if True：\n    pass\n", 1, 8, "colon", "："),
    ("print(“hi”)\n", 1, 7, "quote", "“"),
    ("x = [1, 2】\n", 1, 10, "bracket", "】"),
    ("x = 1.5。real\n", 1, 8, "full_stop", "。"),
    ("x = 1；y = 2\n", 1, 6, "semicolon", "；"),
    ("x ＝ 1\n", 1, 3, "other", "＝"),
    # The editor counts UTF-16 units: the emoji before it is two columns there, one for Python.
    ("s = '😀'; print（1）\n", 1, 16, "parenthesis", "（"),
    # A magic's line is explained as it was typed.
    ("%time print（1）\n", 1, 12, "parenthesis", "（"),
], ids=["colon", "quote", "bracket", "full-stop", "semicolon", "other", "after-an-emoji", "magic"])
def test_each_kind_of_mark_has_its_sentence(run, code, line, column, kind, char):
    error = explained(run(code))
    assert error["explanation_template"] == explain.FULL_WIDTH[kind]
    assert (error["explanation_args"]["line"], error["explanation_args"]["column"]) == (line, column)
    assert error["explanation_args"].get("char", "\u3000") == char


def test_full_width_text_in_strings_and_comments_is_the_code_s_own(run):
    r = run('print("（你好，世界）")  # 注释：全角标点\n')
    assert r.status == "succeeded" and r.stdout == "（你好，世界）\n"


@pytest.mark.parametrize(("code", "says"), [
    ("import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\nf(1.0)\n", "jnp.where"),
    ("import jax.numpy as jnp\njnp.ones(3) + jnp.ones(4)\n", "cannot combine arrays of shapes"),
    ("name = input('name? ')\n", "no keyboard"),
    ("import torch\n", "`torch` is not installed here"),
    ("import jax\njax.devices('gpu')\n", "on a CPU executor, which has no GPU"),
], ids=["tracer-bool", "broadcasting", "input", "not-installed", "no-gpu"])
def test_every_explanation_is_its_template_filled(run, code, says):
    assert says in explained(run(code))["explanation"]
