"""What the web side reads from check code without running it: the checks it declares (their
points make the assignment's max_score) and whether it parses."""

from __future__ import annotations

import pytest

from courses.checks import declared_checks, max_score, validate_checks
from web.errors import ActionError

from .helpers import CHECKS, DECLARED


def test_it_reads_the_checks_of_the_shared_assignment():
    assert declared_checks(CHECKS) == DECLARED
    assert max_score(CHECKS) == 5.0


@pytest.mark.parametrize("source, declared", [
    ('check("a", True)', [{"name": "a", "points": 1.0}]),
    ('check("a", x == 1, 4)', [{"name": "a", "points": 4.0}]),
    ('check("a", x == 1, points=2.5, message="m")', [{"name": "a", "points": 2.5}]),
    ('check("a", ok, 3, "m")', [{"name": "a", "points": 3.0}]),
    ('with check("a"):\n    pass', [{"name": "a", "points": 1.0}]),
    ('with check("a", points=5):\n    pass', [{"name": "a", "points": 5.0}]),
    ('with check("a", 2):\n    pass', [{"name": "a", "points": 2.0}]),
    ('grading.check("a", True, 2)', [{"name": "a", "points": 2.0}]),
    ('if x:\n    check("a", True, 1)\nelse:\n    check("a", False, 1)', [{"name": "a", "points": 1.0}]),
    ('def f():\n    check("inner", True, 2)\nf()', [{"name": "inner", "points": 2.0}]),
    ('check("b", True)\ncheck("a", True)', [{"name": "b", "points": 1.0}, {"name": "a", "points": 1.0}]),
    ('check(f"case {i}", True)', []),  # computed names are known once they report
    ('check(name, True)', []),
    ('check("a", True, points=P)', [{"name": "a", "points": 0.0}]),
    ('check("a", True, -3)', [{"name": "a", "points": 0.0}]),
    ('other("a", True, 9)', []),
    ('check()', []),
    ("this is not python", []),
    ("", []),
])
def test_it_declares_checks_named_by_a_literal(source, declared):
    assert declared_checks(source) == declared


def test_valid_checks_pass():
    validate_checks(CHECKS)
    validate_checks("")


def test_a_syntax_error_is_a_422_that_names_the_line():
    with pytest.raises(ActionError) as raised:
        validate_checks('check("a", True)\ncheck("b",\n')
    assert raised.value.status == 422
    assert "line" in raised.value.message


def test_nul_bytes_are_a_422():
    with pytest.raises(ActionError) as raised:
        validate_checks("x = 1\x00")
    assert raised.value.status == 422


def test_checks_too_large_are_refused():
    with pytest.raises(ActionError) as raised:
        validate_checks("# " + "x" * 70_000)
    assert raised.value.status == 413
