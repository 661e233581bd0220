"""The names each cell binds and reads (``executor.runner.bindings.cell_names``), as the notebook
page's stale tracking reads them through ``POST /api/cells/names``."""

from __future__ import annotations

import pytest

from executor.runner.bindings import cell_names

from .helpers import post

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("source, defines, uses", [
    ("import numpy as np\nimport os.path\nfrom jax import numpy as jnp, jit", ["jit", "jnp", "np", "os"], []),
    ("x = f(y)", ["x"], ["f", "y"]),
    ("x += 1", ["x"], ["x"]),
    ("x = 1\nx += 1", ["x"], []),
    ("a, (b, *c) = t", ["a", "b", "c"], ["t"]),
    ("obj.attr = v\nd[k] = w", [], ["d", "k", "obj", "v", "w"]),
    ("print(y)\ny = 2", ["y"], ["y"]),  # read before bound here: it needs an earlier cell's
    ("for i in range(n):\n    total = total + i", ["i", "total"], ["n", "total"]),
    ("with open(p) as fh, g() as (u, v):\n    data = fh.read()", ["data", "fh", "u", "v"], ["g", "p"]),
    ("try:\n    risky()\nexcept KeyError as e:\n    err = e", ["e", "err"], ["risky"]),
    ("squares = [k * k for k in ks if k > lim]", ["squares"], ["ks", "lim"]),
    ("m = {k: v for k, v in pairs}\ng = (z for z in zs)", ["g", "m"], ["pairs", "zs"]),
    ("def f(a, b=default):\n    return a + b + scale\n", ["f"], ["default", "scale"]),
    ("def f():\n    return helper()\ndef helper():\n    return 1", ["f", "helper"], []),
    ("def reset():\n    global counter\n    counter = start", ["counter", "reset"], ["start"]),
    ("class Model(Base):\n    size = 3\n    twice = size * 2\n    def go(self):\n        return size",
     ["Model"], ["Base", "size"]),  # a method does not see its class's names: it reads the global
    ("del old", ["old"], ["old"]),
    ("print(len(range(3)), True, None)", [], []),  # builtins are not uses
    ("(n := 5) + n", ["n"], []),
    ("fs = [lambda: i for i in r]", ["fs"], ["r"]),
    ("%timeit step(x)\n", [], ["step", "x"]),
    ("%%time\nout = compute(data)\n", ["out"], ["compute", "data"]),
    ("!pip list\nr = %time g(q)", ["r"], ["g", "q"]),
    ("match p:\n    case [first, *rest]:\n        pass\n    case Point(x=px) as whole:\n        pass",
     ["first", "px", "rest", "whole"], ["Point", "p"]),
])
def test_what_a_cell_defines_and_uses(source, defines, uses):
    assert cell_names(source) == (defines, uses, None)


def test_a_cell_that_does_not_parse_gives_the_error_and_no_names():
    defines, uses, error = cell_names("x = 1\ndef (:\n")
    assert (defines, uses) == ([], []) and error.startswith("line 2:")


def test_a_cell_with_magics_that_still_does_not_parse_names_the_line_past_them():
    assert cell_names("%timeit f(x)\nx = (")[2].startswith("line 2:")


def test_the_api_answers_each_cell_in_order(client):
    answer = post(client, "/api/cells/names", {"cells": ["x = 1", "y = x + 1", "def ("]})
    assert answer["cells"][0] == {"defines": ["x"], "uses": [], "error": None}
    assert answer["cells"][1] == {"defines": ["y"], "uses": ["x"], "error": None}
    assert answer["cells"][2]["defines"] == [] and answer["cells"][2]["error"]


@pytest.mark.parametrize("body, message", [
    ({"cells": "x = 1"}, "'cells' must be a list"),
    ({"cells": [1]}, "'cells' must be a list"),
    ([], "JSON object"),
])
def test_the_api_refuses_malformed_bodies(client, body, message):
    assert message in post(client, "/api/cells/names", body, 400)["error"]


def test_the_api_is_bounded(client, settings):
    settings.NOTEBOOK_MAX_BYTES = 1024
    assert "the limit is 1024 bytes" in post(client, "/api/cells/names", {"cells": ["x" * 1025]}, 413)["error"]
    settings.NOTEBOOK_MAX_CELLS = 2
    assert "3 cells; the limit is 2" in post(client, "/api/cells/names", {"cells": ["", "", ""]}, 400)["error"]


def test_a_deeply_nested_cell_is_an_error_not_a_crash():
    defines, uses, error = cell_names("x = " + "(" * 5000 + ")" * 5000)
    assert (defines, uses) == ([], []) and error
