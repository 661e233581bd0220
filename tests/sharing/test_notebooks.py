"""A downloaded notebook runs without the playground. Each gallery example is shared and
downloaded as ``.ipynb`` through the real URLs, then run cell by cell in a plain Python that has
jax and numpy but neither IPython nor ``jaxplay`` (``ipython_like.py`` runs the cells as a kernel
would, in ``python -I``: nothing of this checkout on its path), as Colab would run it; every cell
must run. The ``jaxplay`` a notebook defines takes the same arguments as the playground's."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from executor.runner import jaxplay as playground_jaxplay
from executor.runner import notebook as runner_notebook
from playground.gallery import EXAMPLES_DIR, leading_docstring
from snippets import notebook

pytestmark = pytest.mark.django_db

KERNEL = Path(__file__).with_name("ipython_like.py")
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))
# What a notebook must print besides running: the jaxplay helpers' tables and jaxprs.
PRINTS = {
    "speed-test": ["(mean ± std. dev. of 7 runs, 5 loops each)", "jit, donate_argnums=0 ",
                   "speed-up relative to NumPy", "XLA writes the result into the input's buffer"],
    "grad": ["# f\n{ lambda", "# grad(f)\n", "# vmap(f)\n", "f'(3) = 27.0"],
    "jit": ["step 300", "speed-up relative to without jit"],
}


@pytest.fixture(autouse=True)
def _clean_rate_limits(redis_client):
    for key in redis_client.scan_iter("ratelimit:*"):
        redis_client.delete(key)


def download(client, code: str, title: str = "", description: str = "") -> nbformat.NotebookNode:
    made = client.post("/api/snippets", {"code": code, "title": title, "description": description},
                       content_type="application/json")
    assert made.status_code in (200, 201), made.content
    response = client.get(f"/s/{made.json()['slug']}.ipynb")
    assert response.status_code == 200
    nb = nbformat.reads(response.content.decode(), as_version=4)
    nbformat.validate(nb)
    return nb


def run_cells(cells: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Runs these code cells in a fresh, isolated Python (its status, and what it printed)."""
    # The runner's transformation finds the magic lines as IPython does; the kernel does with
    # them what IPython does.
    turned = [runner_notebook.transform(source)[0].replace(f"{runner_notebook.HELPER}.", "_ipython.")
              for source in cells]
    (tmp_path / "cells.json").write_text(json.dumps(turned))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-I", str(KERNEL), "cells.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=280)


def code_sources(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def test_without_jaxplay_in_the_code_the_notebook_is_the_code_alone(client):
    nb = download(client, "print('hi')\n")
    assert [cell.cell_type for cell in nb.cells] == ["markdown", "code"]
    assert "jaxplay" not in nb.cells[0].source


def test_code_that_imports_jaxplay_gets_a_cell_that_defines_it_first(client):
    code = "import jax.numpy as jnp\nimport jaxplay\n\njaxplay.jaxprs(jnp.sin, jnp.ones(3))\n"
    nb = download(client, code, title="Sine")
    header, helpers, snippet = nb.cells
    assert "The first code cell defines `jaxplay`" in header.source
    assert helpers.cell_type == "code" and helpers.source == notebook.jaxplay_cell_source()
    assert helpers.source.startswith("#@title jaxplay, the JAX Playground's helpers")
    assert helpers.metadata == {"cellView": "form", "jupyter": {"source_hidden": True}}
    assert helpers.outputs == [] and helpers.execution_count is None
    assert snippet.source == code


def test_a_cell_magic_after_comments_gets_a_cell_of_its_own(client):
    code = "# Timed as a whole:\n\n%%time\nx = sum(range(10))\nx\n"
    nb = download(client, code)
    assert code_sources(nb) == ["# Timed as a whole:", "%%time\nx = sum(range(10))\nx\n"]


def test_the_notebooks_jaxplay_takes_the_playgrounds_arguments():
    source = notebook.JAXPLAY_SOURCE.read_text()
    # It sits in the cell between r''' and ''', so it must hold neither those quotes nor end
    # with a backslash.
    assert "'''" not in source and not source.rstrip("\n").endswith("\\")
    module = types.ModuleType("jaxplay")
    exec(compile(source, "<jaxplay>", "exec"), module.__dict__)
    for name in module.__all__:
        assert hasattr(playground_jaxplay, name), name
    for name in ("jaxprs", "bench", "compare", "show"):
        mine = inspect.signature(getattr(module, name))
        theirs = inspect.signature(getattr(playground_jaxplay, name))
        public = [p for p in theirs.parameters.values() if not p.name.startswith("_")]
        assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in public], name
    assert module.__doc__.startswith("jaxplay, the JAX Playground's helpers")


def test_the_kernel_cannot_import_jaxplay_without_the_cell(client, tmp_path):
    code = (EXAMPLES_DIR / "04-grad.py").read_text()
    nb = download(client, code)
    done = run_cells(code_sources(nb)[-1:], tmp_path)
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'jaxplay'" in done.stderr


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_gallery_example_runs_as_a_downloaded_notebook(client, tmp_path, path):
    code = path.read_text()
    title, _, description = (leading_docstring(code) or path.stem).partition("\n")
    nb = download(client, code, title=title, description=description.strip())
    cells = code_sources(nb)
    assert len(cells) == (2 if "import jaxplay" in code else 1)

    done = run_cells(cells, tmp_path)
    assert done.returncode == 0, f"{path.name} failed as a notebook:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.count("--- cell ") == len(cells)
    for text in PRINTS.get(path.stem.split("-", 1)[1], []):
        assert text in done.stdout, f"{path.name}: {text!r} not in\n{done.stdout[-3000:]}"
    # A helper left as the last line shows its table, not its repr after it too.
    for echoed in ("<Comparison", "<BenchResult", "<jaxprs:"):
        assert echoed not in done.stdout, path.name
