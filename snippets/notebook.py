"""A snippet as a Jupyter notebook: a Markdown cell with its title and description, then one code
cell with the code and the saved run's outputs (text, errors, figures), in nbformat 4, so it
opens in Jupyter and Colab as it ran here."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from . import markdown
from .models import Snippet


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
    cells.append(new_markdown_cell(header))
    cell = new_code_cell(snippet.code, execution_count=1 if events else None)
    cell.outputs = outputs_of(events)
    cells.append(cell)
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    return nbformat.writes(nb)
