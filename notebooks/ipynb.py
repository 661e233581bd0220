"""Notebooks as Jupyter notebooks (nbformat 4), both ways.

Export: a Markdown cell that says where the notebook is from, then its cells, each code cell with
the outputs of the run it names, made from the run's stored events as a snippet's are
(``snippets.notebook.outputs_of``). A notebook whose code imports ``jaxplay`` gets the cell that
defines it, as a snippet's does. The header and that cell are marked in their metadata, so that
importing the file again gives back the notebook's own cells.

Import: a file's code, Markdown and raw cells (outputs dropped), read without running anything,
checked as a saved notebook's cells are (``actions.check_cells``)."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import nbformat
from django.conf import settings
from django.utils.translation import gettext as _
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from playground.models import RunEvent
from snippets import markdown
from snippets.notebook import JAXPLAY_NOTE, USES_JAXPLAY, code_cells, jaxplay_cell_source, outputs_of
from web.errors import ActionError

from .actions import check_cells

# Where the playground's own cells are marked: {"jaxplay": "header" | "helper"} in a cell's metadata.
MARK = "jaxplay"
# nbformat 4.5's cell ids.
NB_CELL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
          "language_info": {"name": "python"}}


def run_events(cells: list[dict], may_see=None) -> dict[str, list[dict]]:
    """The stored events of the runs the cells name, by run id, in one query. ``may_see(run_id)``:
    whether the reader may see that run (an own notebook's may name any id)."""
    ids = [cell["run"] for cell in cells if cell.get("type") == "code" and cell.get("run")]
    if may_see is not None:
        ids = [run_id for run_id in ids if may_see(run_id)]
    events = defaultdict(list)
    for run_id, data in RunEvent.objects.filter(run_id__in=ids).order_by("run_id", "seq").values_list("run_id",
                                                                                                      "data"):
        events[str(run_id)].append(data)
    return events


def export(*, title: str, cells: list[dict], events: dict[str, list[dict]], url: str, runtime: str,
           device: str) -> str:
    """The notebook as a .ipynb file's text."""
    header = f"# {markdown.escape(title)}\n\n" if title else ""
    header += f"From the JAX Playground: <{url}>"
    uses_jaxplay = any(cell["type"] == "code" and USES_JAXPLAY.search(cell["source"]) for cell in cells)
    if uses_jaxplay:
        header += "\n\n" + JAXPLAY_NOTE
    out = [new_markdown_cell(header, metadata={MARK: "header"})]
    if uses_jaxplay:
        out.append(new_code_cell(jaxplay_cell_source(), metadata={
            "cellView": "form", "jupyter": {"source_hidden": True}, MARK: "helper"}))
    count = 0
    for cell in cells:
        if cell["type"] == "markdown":
            out.append(_with_id(new_markdown_cell(cell["source"]), cell))
            continue
        *before, last = code_cells(cell["source"])  # a %%time after comments: IPython wants it first
        out.extend(new_code_cell(text) for text in before)
        ran = events.get(cell.get("run") or "")
        count += 1 if ran else 0
        code = _with_id(new_code_cell(last, execution_count=count if ran else None), cell)
        code.outputs = outputs_of(ran or [])
        out.append(code)
    nb = new_notebook(cells=out, metadata={**KERNEL, MARK: {"title": title, "runtime": runtime, "device": device,
                                                            "url": url}})
    nbformat.validate(nb)
    return nbformat.writes(nb)


def _with_id(nb_cell, cell: dict):
    """A cell keeps its id where nbformat allows it (a made one otherwise)."""
    if NB_CELL_ID.fullmatch(cell.get("id") or ""):
        nb_cell["id"] = cell["id"]
    return nb_cell


# Import -----------------------------------------------------------------------------------------

def parse(data: bytes) -> dict:
    """``{"title", "cells", "runtime"?, "device"?}`` of a .ipynb file, or a 400 that says what is
    wrong with it."""
    limit = settings.NOTEBOOK_IMPORT_MAX_BYTES
    if len(data) > limit:
        raise ActionError(_("the file is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB)")
                          % {"size": len(data), "limit": limit, "kib": limit // 1024})
    try:
        nb = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ActionError(_("the file is not a Jupyter notebook: it is not JSON")) from None
    if not isinstance(nb, dict) or "nbformat" not in nb:
        raise ActionError(_("the file is not a Jupyter notebook: it has no 'nbformat'"))
    if nb["nbformat"] != 4:
        raise ActionError(_("the notebook is nbformat %(version)s; only nbformat 4 is read (save it again with Jupyter "
                            "4 or later)") % {"version": str(nb["nbformat"])[:20]})
    raw_cells = nb.get("cells")
    if not isinstance(raw_cells, list):
        raise ActionError(_("the notebook's 'cells' is not a list"))
    if len(raw_cells) > settings.NOTEBOOK_MAX_CELLS:
        raise ActionError(_("the notebook has %(count)s cells; the limit is %(limit)s")
                          % {"count": len(raw_cells), "limit": settings.NOTEBOOK_MAX_CELLS})
    cells, seen = [], set()
    for number, raw in enumerate(raw_cells, 1):
        cell = _cell(raw, number)
        if cell is not None:
            if cell["id"] in seen:  # a file whose ids repeat: the copies get ids of their own
                cell["id"] = None
            seen.add(cell["id"])
            cells.append(cell)
    metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    ours = metadata.get(MARK) if isinstance(metadata.get(MARK), dict) else {}
    title = ours.get("title", metadata.get("title", ""))
    found = {"title": title[:200].strip() if isinstance(title, str) else "", "cells": check_cells(cells)}
    found.update({key: ours[key] for key in ("runtime", "device") if isinstance(ours.get(key), str)})
    return found


def _cell(raw, number: int) -> dict | None:
    """A notebook's cell as ours, or None for the playground's own header and helper cells."""
    if not isinstance(raw, dict):
        raise ActionError(_("the notebook's cell %(number)s is not an object") % {"number": number})
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    source = raw.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise ActionError(_("the notebook's cell %(number)s has a source that is neither text nor a list of lines")
                          % {"number": number})
    if metadata.get(MARK) in ("header", "helper") or source == jaxplay_cell_source():
        return None
    kind = raw.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        raise ActionError(_("the notebook's cell %(number)s is of an unknown type %(kind)s")
                          % {"number": number, "kind": repr(str(kind)[:40])})
    cell_id = raw.get("id")
    return {"type": "code" if kind == "code" else "markdown", "source": source,
            "id": cell_id if isinstance(cell_id, str) and NB_CELL_ID.fullmatch(cell_id) else None}
