"""JSON shapes of notebooks in the public API, and the data a notebook page starts from."""

from __future__ import annotations

from playground.runtimes import current

from .models import Notebook, SharedNotebook


def notebook_summary(notebook: Notebook) -> dict:
    return {"id": str(notebook.id), "title": notebook.title, "updated_at": notebook.updated_at.isoformat(),
            "cells": len(notebook.cells), "url": notebook.get_absolute_url()}


def notebook_detail(notebook: Notebook) -> dict:
    url = notebook.get_absolute_url()
    return {
        "id": str(notebook.id), "title": notebook.title, "cells": notebook.cells, "runtime": notebook.runtime,
        "device": notebook.device, "version": notebook.version, "created_at": notebook.created_at.isoformat(),
        "updated_at": notebook.updated_at.isoformat(), "url": url, "ipynb_url": f"{url}.ipynb",
        "save_url": f"/api/notebooks/{notebook.id}",
        "forked_from": shared_links(notebook.forked_from) if notebook.forked_from_id else None,
    }


def shared_links(shared: SharedNotebook) -> dict:
    url = shared.get_absolute_url()
    return {"slug": shared.slug, "url": url, "ipynb_url": f"{url}.ipynb"}


def shared_detail(shared: SharedNotebook) -> dict:
    return {**shared_links(shared), "title": shared.title, "cells": shared.cells, "runtime": shared.runtime,
            "device": shared.device, "created_at": shared.created_at.isoformat()}


def page_data(*, title: str = "", cells: list | None = None, runtime: str, device: str, signed_in: bool,
              notebook: Notebook | None = None, shared: SharedNotebook | None = None,
              import_error: str | None = None, draft: str | None = None) -> dict:
    """What every notebook page's script reads (``notebook-data``): an own notebook is editable
    and saved to its API URL; a shared one is read-only; a new one (``notebook`` and ``shared``
    None) is editable and saved once created (signed in) or kept as a draft (signed out). Cells
    run on the runtime's current id (a retired one's successor)."""
    return {
        "id": str(notebook.id) if notebook else None,
        "title": title,
        "cells": cells if cells is not None else [],
        "runtime": current(runtime),
        "device": device,
        "editable": shared is None,
        "save_url": f"/api/notebooks/{notebook.id}" if notebook else None,
        "version": notebook.version if notebook else None,
        "shared": shared_links(shared) if shared else None,
        "signed_in": signed_in,
        "import_error": import_error,
        "draft": draft,
    }
