"""State changes of notebooks. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes
state without validating."""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor.runner.bindings import cell_names
from playground.access import access_run_for_user
from playground.devices import check_device
from playground.runtimes import check_runtime
from snippets.slugs import slug_candidates
from web.api import plain_text, text
from web.clients import Client
from web.errors import ActionError
from web.ratelimit import check_rate
from web.redis import exclusive

from .models import Notebook, SharedNotebook, SharedNotebookRun
from .serializers import notebook_detail

TITLE_MAX = 200
CELL_TYPES = ("code", "markdown")
CELL_ID_MAX = 64
SHARED_NOTEBOOKS = gettext_lazy("shared notebooks")


# Cells ------------------------------------------------------------------------------------------

def check_cells(value, *, name: str = "cells") -> list[dict]:
    """A list of cells as a notebook keeps them: ``{"id", "type", "source", "run"?}``, each id
    unique (one is made for a cell without), a code cell's run a run id (a Markdown cell has
    none), within NOTEBOOK_MAX_CELLS cells, RUN_MAX_CODE_BYTES a cell and NOTEBOOK_MAX_BYTES in all."""
    if not isinstance(value, list):
        raise ActionError(_('\'%(name)s\' must be a list of cells, each {"type": "code" or "markdown", "source": '
                            '<text>}') % {"name": name})
    if len(value) > settings.NOTEBOOK_MAX_CELLS:
        raise ActionError(_("the notebook has %(count)s cells; the limit is %(limit)s")
                          % {"count": len(value), "limit": settings.NOTEBOOK_MAX_CELLS})
    cells, seen, total = [], set(), 0
    for number, raw in enumerate(value, 1):
        cell = _check_cell(raw, number)
        if cell["id"] in seen:
            raise ActionError(_("cell %(number)s's id %(id)s is another cell's too: each cell needs its own")
                              % {"number": number, "id": repr(cell["id"])})
        seen.add(cell["id"])
        total += len(cell["source"].encode("utf-8"))
        cells.append(cell)
    if total > settings.NOTEBOOK_MAX_BYTES:
        raise ActionError(_("the notebook's cells are %(size)s bytes in all; the limit is %(limit)s bytes (%(kib)s "
                            "KiB)") % {"size": total, "limit": settings.NOTEBOOK_MAX_BYTES,
                                       "kib": settings.NOTEBOOK_MAX_BYTES // 1024})
    return cells


def _check_cell(raw, number: int) -> dict:
    if not isinstance(raw, dict):
        raise ActionError(_('cell %(number)s must be an object {"type", "source"}') % {"number": number})
    kind = raw.get("type", "code")
    if kind not in CELL_TYPES:
        raise ActionError(_('cell %(number)s\'s type must be "code" or "markdown", not %(kind)s')
                          % {"number": number, "kind": repr(str(kind)[:40])})
    source = raw.get("source", "")
    if not isinstance(source, str):
        raise ActionError(_("cell %(number)s's source must be a string") % {"number": number})
    plain_text(source, _("cell %(number)s's source") % {"number": number})
    size = len(source.encode("utf-8"))
    if size > settings.RUN_MAX_CODE_BYTES:
        raise ActionError(_("cell %(number)s is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB) a cell")
                          % {"number": number, "size": size, "limit": settings.RUN_MAX_CODE_BYTES,
                             "kib": settings.RUN_MAX_CODE_BYTES // 1024})
    cell = {"id": _cell_id(raw.get("id"), number), "type": kind, "source": source}
    if kind == "code" and raw.get("run") is not None:
        cell["run"] = _run_id(raw["run"], number)
    return cell


def _cell_id(value, number: int) -> str:
    if value is None or value == "":
        return new_cell_id()
    if not isinstance(value, str) or len(value) > CELL_ID_MAX or not value.isprintable():
        raise ActionError(_("cell %(number)s's id must be a string of at most %(limit)s printable characters")
                          % {"number": number, "limit": CELL_ID_MAX})
    return value


def new_cell_id() -> str:
    return "c" + secrets.token_hex(6)


def _run_id(value, number: int) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise ActionError(_("cell %(number)s's run must be a run's id (a UUID)") % {"number": number}) from None


def _check_title(payload: dict) -> str | None:
    return text(payload, "title", TITLE_MAX, strip=True, unit="characters")


def _check_where(payload: dict, *, partial: bool) -> dict:
    """The runtime and device a payload names (absent: the defaults, or unchanged when ``partial``)."""
    fields = {}
    if not partial or "runtime" in payload:
        fields["runtime"] = check_runtime(payload.get("runtime"))[0]
    if not partial or "device" in payload:
        fields["device"] = check_device(payload.get("device") or settings.RUN_DEFAULT_DEVICE)
    return fields


def _object(payload) -> dict:
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object"))
    return payload


# A person's notebooks ---------------------------------------------------------------------------

def check_signed_in(user, doing: str):
    """``doing``: what needs an account, a lazy text (said in the refusal)."""
    if user is None or not user.is_authenticated:
        raise ActionError(_("sign in to %(doing)s: a notebook of someone signed out is a draft kept in their browser")
                          % {"doing": doing}, status=403)
    return user


def check_create_notebook(payload, *, user) -> Notebook:
    """A new notebook of the signed-in ``user``: ``{title?, cells?, runtime?, device?}``."""
    payload = _object(payload)
    check_signed_in(user, gettext_lazy("save notebooks on the site"))
    title = _check_title(payload) or ""
    cells = check_cells(payload.get("cells", []))
    where = _check_where(payload, partial=False)
    with exclusive(f"notebooks:{user.pk}"):  # counted and made together: a burst must not pass the cap
        check_room(user)
        return do_create_notebook(owner=user, title=title, cells=cells, **where)


def check_room(user) -> None:
    count = Notebook.objects.filter(owner=user).count()
    if count >= settings.NOTEBOOK_MAX_PER_PERSON:
        raise ActionError(_("you have %(count)s notebooks, the most one person may keep: delete some first")
                          % {"count": count}, status=409)


def do_create_notebook(*, owner, title: str, cells: list[dict], runtime: str, device: str,
                       forked_from: SharedNotebook | None = None) -> Notebook:
    return Notebook.objects.create(owner=owner, title=title, cells=cells, runtime=runtime, device=device,
                                   forked_from=forked_from)


def check_update_notebook(notebook: Notebook, payload) -> Notebook:
    """Save ``{title?, cells?, runtime?, device?, version?}`` over the notebook: only the fields
    given change. With ``version`` (the one the page last loaded or saved), a notebook saved
    since by another page is not overwritten: a 409 with the version it is at now."""
    payload = _object(payload)
    fields = {}
    if "title" in payload:
        fields["title"] = _check_title(payload) or ""
    if "cells" in payload:
        fields["cells"] = check_cells(payload["cells"])
    fields.update(_check_where(payload, partial=True))
    version = payload.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 1):
        raise ActionError(_("'%(name)s' must be the notebook's version, a positive integer") % {"name": "version"})
    return do_update_notebook(notebook, fields, version=version)


def do_update_notebook(notebook: Notebook, fields: dict, *, version: int | None = None) -> Notebook:
    """One conditional UPDATE: two saves of the same version cannot both pass."""
    rows = Notebook.objects.filter(pk=notebook.pk)
    if version is not None:
        rows = rows.filter(version=version)
    if not rows.update(**fields, version=F("version") + 1, updated_at=timezone.now()):
        current = Notebook.objects.filter(pk=notebook.pk).first()
        if current is None:
            raise ActionError(_("this notebook was deleted"), status=404)
        raise ActionError(_("this notebook was saved elsewhere since you loaded it (it is at version %(current)s, you "
                            "sent %(sent)s): reload it, or save again with version %(current)s to keep yours")
                          % {"current": current.version, "sent": version}, status=409,
                          data={"version": current.version, "notebook": notebook_detail(current)})
    notebook.refresh_from_db()
    return notebook


def do_delete_notebook(notebook: Notebook) -> None:
    """Its cells go; the runs they named stay (they are the person's runs)."""
    Notebook.objects.filter(pk=notebook.pk).delete()


# Sharing ----------------------------------------------------------------------------------------

def check_share_notebook(payload, *, user, client: Client) -> tuple[SharedNotebook, bool]:
    """Share ``{title, cells: [{type, source, run?}], runtime, device}`` as an immutable link;
    (shared, created). The same content (title, cells' types and sources, runtime, device) gives
    the same link. A code cell's run is kept as its output when the caller may see it and it ran
    that cell's source; any other is left out (a cell edited since it ran has no output yet)."""
    payload = _object(payload)
    title = _check_title(payload) or ""
    cells = check_cells(payload.get("cells", []))
    if not cells:
        raise ActionError(_("a shared notebook needs at least one cell"))
    where = _check_where(payload, partial=False)
    runs = {}
    for cell in cells:
        named = cell.pop("run", None)
        run = access_run_for_user(named, user) if named else None
        if run is not None and run.code == cell["source"]:
            cell["run"] = str(run.id)
            runs[cell["run"]] = run
    check_rate("notebooks", client.key, settings.NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR, 3600, SHARED_NOTEBOOKS)
    owner = user if user is not None and user.is_authenticated else None
    return do_share_notebook(title=title, cells=cells, runs=list(runs.values()), owner=owner, **where)


def content_hash(title: str, cells: list[dict], runtime: str, device: str) -> str:
    """What a shared notebook's link is made from: what it says, not the runs it shows."""
    content = {"title": title, "cells": [[cell["type"], cell["source"]] for cell in cells],
               "runtime": runtime, "device": device}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def do_share_notebook(*, title: str, cells: list[dict], runtime: str, device: str, runs: list,
                      owner) -> tuple[SharedNotebook, bool]:
    """As a snippet: content shared before answers with its link (and keeps these runs when it
    was shared without any); a slug another content's begins with is passed for a longer one."""
    digest = content_hash(title, cells, runtime, device)
    existing = SharedNotebook.objects.filter(content_hash=digest).first()
    if existing is not None:
        if runs and not existing.kept_runs.exists():
            _keep_runs(existing, cells, runs)
        return existing, False
    for slug in slug_candidates(digest):
        try:
            with transaction.atomic():
                shared = SharedNotebook.objects.create(slug=slug, content_hash=digest, title=title, cells=cells,
                                                       runtime=runtime, device=device, owner=owner)
                SharedNotebookRun.objects.bulk_create([SharedNotebookRun(notebook=shared, run=run) for run in runs])
                return shared, True
        except IntegrityError:
            same = SharedNotebook.objects.filter(content_hash=digest).first()
            if same is not None:  # shared by a concurrent request just now
                return same, False
    raise ActionError(_("could not find a free link for this notebook"), status=500)


def _keep_runs(shared: SharedNotebook, cells: list[dict], runs: list) -> None:
    """A link shared without outputs takes the first outputs shared for the same content."""
    with transaction.atomic():
        if SharedNotebookRun.objects.select_for_update().filter(notebook=shared).exists():
            return
        kept = [{**old, **({"run": new["run"]} if "run" in new else {})} for old, new in zip(shared.cells, cells)]
        SharedNotebook.objects.filter(pk=shared.pk).update(cells=kept)
        SharedNotebookRun.objects.bulk_create([SharedNotebookRun(notebook=shared, run=run) for run in runs])
    shared.refresh_from_db()


# Forks ------------------------------------------------------------------------------------------

def fork_title(title: str) -> str:
    return (_("%(title)s (copy)") % {"title": title} if title else _("Untitled notebook (copy)"))[:TITLE_MAX]


def check_fork(*, title: str, cells: list[dict], runtime: str, device: str, user,
               forked_from: SharedNotebook | None = None) -> Notebook | dict:
    """A copy that is the caller's: a new notebook of theirs when signed in, else the draft their
    browser keeps (``{"title", "cells", "runtime", "device"}``). The cells keep their runs, so the
    copy shows the outputs the original did until its cells run again."""
    copied = [{**cell, "id": cell.get("id") or new_cell_id()} for cell in cells]
    if user is None or not user.is_authenticated:
        return {"title": title, "cells": copied, "runtime": runtime, "device": device}
    with exclusive(f"notebooks:{user.pk}"):
        check_room(user)
        return do_create_notebook(owner=user, title=title, cells=copied, runtime=runtime, device=device,
                                  forked_from=forked_from)


# Cells' names -----------------------------------------------------------------------------------

def check_cell_names(payload) -> list[dict]:
    """``{"cells": [code, ...]}``: each cell's top-level names bound and global names read, for the
    page's stale cells; bounded as a notebook is (NOTEBOOK_MAX_CELLS, NOTEBOOK_MAX_BYTES)."""
    payload = _object(payload)
    sources = payload.get("cells")
    if not isinstance(sources, list) or not all(isinstance(source, str) for source in sources):
        raise ActionError(_("'%(name)s' must be a list of the code cells' sources (strings)") % {"name": "cells"})
    if len(sources) > settings.NOTEBOOK_MAX_CELLS:
        raise ActionError(_("%(count)s cells; the limit is %(limit)s")
                          % {"count": len(sources), "limit": settings.NOTEBOOK_MAX_CELLS})
    total = sum(len(source.encode("utf-8", errors="surrogatepass")) for source in sources)
    if total > settings.NOTEBOOK_MAX_BYTES:
        raise ActionError(_("the cells are %(size)s bytes in all; the limit is %(limit)s bytes")
                          % {"size": total, "limit": settings.NOTEBOOK_MAX_BYTES}, status=413)
    answers = []
    for source in sources:
        defines, uses, error = cell_names(source)
        answers.append({"defines": defines, "uses": uses, "error": error})
    return answers
