"""Every example of the gallery runs in the sandbox as shipped and fills the panes it is there
to show."""

from __future__ import annotations

import pytest

from playground.gallery import EXAMPLES_DIR, leading_docstring

EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))
# What each example must produce besides succeeding: event types, at least once each.
EXPECTED = {
    "speed-test": {"timing", "compiled"},
    "numpy-mlp": {"stdout"},
    "jax-numpy": {"stdout"},
    "grad": {"display"},  # jaxplay.jaxprs: f, grad(f) and vmap(f) side by side
    "vmap": {"compiled"},
    "jit": {"compiled"},
    "pmap": {"compiled"},
    "shard-map": {"compiled"},
}


def test_the_gallery_is_the_articles_walk_through():
    assert [p.stem.split("-", 1)[1] for p in EXAMPLES] == list(EXPECTED)
    for path in EXAMPLES:
        doc = leading_docstring(path.read_text())
        assert doc and len(doc.splitlines()[0]) < 60, path


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_runs_and_fills_its_panes(run, path):
    result = run(path.read_text())
    assert result.status == "succeeded", result
    produced = {e["type"] for e in result.events}
    missing = EXPECTED[path.stem.split("-", 1)[1]] - produced
    assert not missing, f"{path.name} produced no {missing}: {result!r}"
    assert not result.error
    # A jaxplay helper left as the last line shows its table, not its repr after it as well.
    for echoed in ("<Comparison", "<BenchResult", "<jaxprs:"):
        assert echoed not in result.stdout, f"{path.name} echoed {echoed}…>: {result.stdout[-300:]!r}"
