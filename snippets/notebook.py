"""A snippet as a Jupyter notebook: a Markdown cell with its title and description, then one code
cell with the code and the saved run's outputs (text, errors, figures), in nbformat 4, so it
opens in Jupyter and Colab as it ran here.

The runner's notebook habits are IPython's own (``%timeit``, ``%time``, ``!pip``, a last
expression's value), so the code goes as written. Two things only the playground has are made to
work elsewhere: ``import jaxplay`` (a code cell before the snippet's defines the module from
``notebook_jaxplay.py``), and a ``%%time`` or ``%%timeit`` after comments, which IPython takes
only as a cell's first line (the comments get a cell of their own).
``tests/sharing/test_notebooks.py`` keeps that module's arguments the runner's jaxplay's, and
runs every gallery example's notebook in a Python that has neither the playground nor IPython."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from . import markdown
from .models import Snippet

JAXPLAY_SOURCE = Path(__file__).with_name("notebook_jaxplay.py")
# Any mention: `import jaxplay`, `from jaxplay import compare`, `import numpy as np, jaxplay`. A
# comment that names it costs a cell that does nothing, where a missed import costs the notebook.
USES_JAXPLAY = re.compile(r"\bjaxplay\b")
JAXPLAY_NOTE = ("The first code cell defines `jaxplay`, the playground's helpers, in plain Python, "
                "so that the code runs here too: what the playground shows in its Compiled and Timing "
                "panes is printed instead.")


@lru_cache(maxsize=1)
def jaxplay_cell_source() -> str:
    """A code cell that makes ``import jaxplay`` work without the playground: the module's source
    in a string, run as a module of its own (so the notebook's names never shadow its helpers'),
    put where ``import`` finds it, its lines given to tracebacks."""
    source = JAXPLAY_SOURCE.read_text()  # between r''' and ''': a test keeps those quotes out of it
    return (
        "#@title jaxplay, the JAX Playground's helpers, so that this notebook runs without it\n"
        "# The code below imports jaxplay, a module only the playground has. This cell defines it in\n"
        "# plain Python (jax, numpy and the standard library), with the same functions and arguments:\n"
        "# jaxprs, bench, compare and show print here what the playground shows in its panes.\n"
        "import linecache\n"
        "import sys\n"
        "import types\n"
        "\n"
        f"_JAXPLAY = r'''{source}'''\n"
        "linecache.cache[\"<jaxplay>\"] = (len(_JAXPLAY), None, _JAXPLAY.splitlines(True), \"<jaxplay>\")\n"
        "jaxplay = sys.modules[\"jaxplay\"] = types.ModuleType(\"jaxplay\")\n"
        "exec(compile(_JAXPLAY, \"<jaxplay>\", \"exec\"), jaxplay.__dict__)\n"
    )


def code_cells(code: str) -> list[str]:
    """The snippet's code as IPython takes it: one cell, or two when a cell magic follows
    comments (the runner allows that; IPython reads ``%%time`` only on a cell's first line)."""
    lines = code.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), -1)
    if first > 0 and lines[first].lstrip().startswith("%%"):
        return ["".join(lines[:first]).rstrip("\n"), "".join(lines[first:]).lstrip()]
    return [code]


def outputs_of(events: list[dict]) -> list:
    outputs = []
    for event in events:
        kind = event.get("type")
        if kind in ("stdout", "stderr"):
            if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == kind:
                outputs[-1]["text"] += event.get("text") or ""
            else:
                outputs.append(new_output("stream", name=kind, text=event.get("text") or ""))
        elif kind == "display" and event.get("mime") == "image/png" and event.get("data"):
            outputs.append(new_output("display_data", data={"image/png": event["data"],
                                                            "text/plain": event.get("text") or "<Figure>"}))
        elif kind == "error":
            outputs.append(new_output("error", ename=event.get("exc_type") or "Error",
                                      evalue=event.get("message") or "",
                                      traceback=(event.get("traceback") or "").splitlines()))
    return outputs


def notebook(snippet: Snippet, events: list[dict], url: str) -> str:
    """The title and description come first, in a Markdown cell, as the snippet's page shows them:
    Jupyter and Colab render raw HTML and images in Markdown, so the description goes as the
    page's own sanitised HTML (``markdown.for_notebook``) and the title as plain text."""
    cells = []
    header = f"# {markdown.escape(snippet.title)}\n\n" if snippet.title else ""
    header += (markdown.for_notebook(snippet.description) + "\n\n") if snippet.description else ""
    header += f"From the JAX Playground: <{url}>"
    if snippet.jax_version:
        header += f" (saved with JAX {snippet.jax_version} on {snippet.device})"
    uses_jaxplay = bool(USES_JAXPLAY.search(snippet.code))
    if uses_jaxplay:
        header += "\n\n" + JAXPLAY_NOTE
    cells.append(new_markdown_cell(header))
    if uses_jaxplay:
        # Colab shows the cell as its title (a form), JupyterLab with its code folded away.
        cells.append(new_code_cell(jaxplay_cell_source(),
                                   metadata={"cellView": "form", "jupyter": {"source_hidden": True}}))
    *before, last = code_cells(snippet.code)
    cells.extend(new_code_cell(text) for text in before)
    cell = new_code_cell(last, execution_count=1 if events else None)
    cell.outputs = outputs_of(events)
    cells.append(cell)
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    return nbformat.writes(nb)
