"""The editor's analyser engine (jedi over the code as text) and the lint's reading of it: what
completion, signatures and hover answer for JAX names, notebook lines, and the limits of what
goes back. The engine runs here in the test process (the service runs it in processes of its
own: tests/integration/test_analyser.py)."""

from __future__ import annotations

import pytest

from executor.analyser import engine, wire

HEAD = "import jax\nimport jax.numpy as jnp\nimport optax\n"


def complete(code: str) -> list[str]:
    """Completion at the end of ``code``."""
    lines = code.split("\n")
    return [i["label"] for i in engine.complete(code, len(lines), len(lines[-1]) + 1)["items"]]


def test_module_members_of_jnp_random_lax_and_optax():
    assert "einsum" in complete(HEAD + "jnp.ein")
    assert complete(HEAD + "jax.random.nor") == ["normal"]
    assert "scan" in complete(HEAD + "jax.lax.sc")
    assert "adam" in complete(HEAD + "optax.ad")


def test_attributes_of_an_array_and_of_names_the_snippet_defines():
    assert {"shape", "dtype", "reshape"} <= set(complete(HEAD + "x = jnp.ones((3, 3))\nx."))
    assert "learning_rate" in complete("def train(learning_rate, steps):\n    return learn")
    assert "params" in complete("params = {'w': 1}\npar")


def test_an_item_has_its_kind_signature_and_the_first_lines_of_its_doc():
    code = HEAD + "jnp.einsu"
    item = engine.complete(code, 4, 10)["items"][0]
    assert item["label"] == "einsum" and item["kind"] == "function"
    assert item["signature"].startswith("einsum(subscript")
    assert "Einstein summation" in item["doc"]
    assert len(item["doc"].split("\n")) <= engine.DETAIL_DOC_LINES


def test_signature_help_names_the_parameter_being_typed():
    code = HEAD + "jnp.einsum('ij,jk', a, "
    found = engine.signatures(code, 4, len("jnp.einsum('ij,jk', a, ") + 1)["signatures"]
    assert found and found[0]["params"][0]["name"] == "subscript"
    assert found[0]["index"] == 1  # *operands
    code = HEAD + "jax.random.normal("
    first = engine.signatures(code, 4, len("jax.random.normal(") + 1)["signatures"][0]
    assert [p["name"] for p in first["params"]][:2] == ["key", "shape"] and first["index"] == 0


def test_hover_gives_the_docstring_and_the_public_page_of_a_jax_name():
    found = engine.hover(HEAD + "jnp.einsum", 4, 7)
    assert "Einstein summation" in found["doc"]
    assert found["docs_url"] == "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.einsum.html"
    assert engine.hover(HEAD + "optax.adam", 4, 9)["docs_url"] is None  # not a jax page
    assert engine.hover("", 1, 1) == {}


def test_notebook_lines_are_read_as_python():
    assert "einsum" in complete(HEAD + "%timeit jnp.ein")
    assert "einsum" in complete(HEAD + "%timeit -n 10 -r 3 jnp.ein")
    source, shifts = wire.as_python("!pip install optax\n    %time f(x)\nx = 1")
    assert source == "pass\n    f(x)\nx = 1"
    assert shifts == {2: len("%time ")}


def test_what_goes_back_is_bounded():
    many = "\n".join(f"name_{i} = {i}" for i in range(engine.MAX_ITEMS + 50)) + "\nname_"
    answer = engine.complete(many, engine.MAX_ITEMS + 51, 6)
    assert len(answer["items"]) == engine.MAX_ITEMS and answer["more"] is True
    assert all(len(i.get("doc", "")) <= engine.DOC_CHARS for i in answer["items"])


def test_positions_outside_the_code_answer_nothing():
    assert engine.complete("x = 1", 5, 1) == {"items": []}
    assert engine.signatures("x = 1", 0, 1) == {"signatures": []}


@pytest.mark.parametrize("code", ["\x00\x01\xff binary \ud800", "x = " + "(" * 3000 + ")" * 3000, "é" * 10000])
def test_odd_input_is_an_answer_or_a_known_error(code):
    try:
        answer = engine.complete(code, 1, 3)
    except RecursionError:
        return  # the analyser's process answers this as "too deeply nested"
    assert isinstance(answer["items"], list)


def test_the_nodes_files_are_never_listed():
    for code in ("open('/etc/", "open('/", "import os\nos.listdir('/ro", "x = '/usr/li"):
        lines = code.split("\n")
        answer = engine.complete(code, len(lines), len(lines[-1]) + 1)
        assert answer["items"] == [] or all(i["kind"] != "path" for i in answer["items"]), answer
    assert engine.resolve("open('/etc/", 1, 12, "passwd") == {}


def test_the_code_cannot_point_the_analysis_at_the_nodes_files(tmp_path):
    """A snippet's sys.path changes are not followed, and only the libraries' folders are read:
    no listing of /, no string constant of a .py file elsewhere, none of the playground's own."""
    (tmp_path / "planted_conf.py").write_text('SECRET = "s3cr3t-literal-value"\n')
    listing = f"import sys\nsys.path.insert(0, '/')\nsys.path.append('{tmp_path}')\nimport "
    names = complete(listing + "e") + complete(listing + "pla")
    assert "etc" not in names and "executor" not in names and "planted_conf" not in names
    reading = (f"import sys\nsys.path.append('{tmp_path}')\nfrom planted_conf import SECRET\n{{SECRET: 1}}['")
    assert not any("s3cr3t" in label for label in complete(reading))
    assert "einsum" in complete(HEAD + "jnp.ein")  # the libraries still are
