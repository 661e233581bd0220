"""Notebooks: the API, the pages (each renders the one notebook page with its data), the list of
one's own and the .ipynb downloads. Opening a notebook runs nothing: its code cells show the
outputs of the runs they name."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from playground.access import access_run_for_user
from playground.runtimes import default as default_runtime
from playground.views import page_context
from web.api import api, parse_json
from web.clients import request_client
from web.errors import ActionError

from . import imports, ipynb
from .access import access_own_notebook, access_own_notebooks, access_shared_notebook
from .actions import (check_cell_names, check_create_notebook, check_fork, check_share_notebook,
                      check_update_notebook, do_delete_notebook, fork_title, new_cell_id)
from .models import Notebook, SharedNotebook
from .serializers import notebook_detail, notebook_summary, page_data, shared_detail, shared_links

LIST_MAX = 500


def _own_or_404(request, notebook_id) -> Notebook:
    notebook = access_own_notebook(notebook_id, request.user)
    if notebook is None:
        raise Http404(_("no such notebook of yours"))
    return notebook


def _shared_or_404(slug) -> SharedNotebook:
    shared = access_shared_notebook(slug)
    if shared is None:
        raise Http404(_("no such shared notebook"))
    return shared


def _signed_in(request) -> bool:
    return request.user.is_authenticated


# The API ----------------------------------------------------------------------------------------

@api("GET", "POST")
def api_notebooks(request):
    if request.method == "POST":
        notebook = check_create_notebook(parse_json(request), user=request.user)
        return JsonResponse(notebook_detail(notebook), status=201)
    if not _signed_in(request):
        raise ActionError(_("sign in (a session, or Authorization: Bearer <token>) to see your notebooks"), status=401)
    notebooks = access_own_notebooks(request.user)[:LIST_MAX]
    return JsonResponse({"notebooks": [notebook_summary(notebook) for notebook in notebooks]})


@api("GET", "PUT", "DELETE")
def api_notebook(request, notebook_id):
    notebook = _own_or_404(request, notebook_id)
    if request.method == "PUT":
        notebook = check_update_notebook(notebook, parse_json(request))
    elif request.method == "DELETE":
        do_delete_notebook(notebook)
        return HttpResponse(status=204)
    return JsonResponse(notebook_detail(notebook))


def _forked(result) -> JsonResponse:
    if isinstance(result, Notebook):
        return JsonResponse(notebook_detail(result), status=201)
    return JsonResponse(result)  # a signed-out person's draft, kept by their browser


@api("POST")
def api_notebook_fork(request, notebook_id):
    notebook = _own_or_404(request, notebook_id)
    return _forked(check_fork(title=fork_title(notebook.title), cells=notebook.cells, runtime=notebook.runtime,
                              device=notebook.device, user=request.user))


@api("POST")
def api_share(request):
    shared, created = check_share_notebook(parse_json(request), user=request.user, client=request_client(request))
    return JsonResponse({**shared_links(shared), "created": created}, status=201 if created else 200)


@api("GET")
def api_shared(request, slug):
    return JsonResponse(shared_detail(_shared_or_404(slug)))


@api("POST")
def api_shared_fork(request, slug):
    shared = _shared_or_404(slug)
    return _forked(check_fork(title=shared.title, cells=shared.cells, runtime=shared.runtime, device=shared.device,
                              user=request.user, forked_from=shared))


@api("POST")
def api_import(request):
    """Not saved: the page shows the cells, then saves them as a new notebook (or a draft)."""
    if request.content_type == "multipart/form-data":
        found = imports.check_import_file(request.FILES.get("file"))
    else:
        payload = parse_json(request)
        if not isinstance(payload, dict):
            raise ActionError(_('send JSON {"url": <link>}, or the .ipynb file as the multipart field \'file\''))
        found = imports.check_import_url(payload.get("url"), host=request.get_host(), user=request.user)
    return JsonResponse(found)


@api("POST")
def api_cell_names(request):
    return JsonResponse({"cells": check_cell_names(parse_json(request))})


# Pages ------------------------------------------------------------------------------------------

def _page(request, data: dict, *, status: int = 200, preview: dict | None = None):
    title = data["title"] or (_("Shared notebook") if data["shared"] else _("Untitled notebook"))
    context = page_context(request) | {"notebook": data, "page_title": title, "preview": preview}
    return render(request, "notebooks/notebook.html", context, status=status)


@require_GET
@never_cache
def notebooks_page(request):
    """One's notebooks; signed out, where drafts are kept, and a way to start one."""
    rows = list(access_own_notebooks(request.user)[:LIST_MAX]) if _signed_in(request) else []
    return render(request, "notebooks/list.html", {"rows": rows, "nav": "notebooks"})


@require_GET
@never_cache
@ensure_csrf_cookie
def new_notebook_page(request, draft_id=None):
    """A new notebook: empty, a shared snippet's (``?snippet=<slug>``) or a shared notebook's or
    snippet's export link (``?import=<url>``). What cannot be opened says why, on an empty one.
    At ``/notebooks/draft/<id>`` it is a signed-out person's draft, which only their browser
    holds: the page opens the browser's copy kept under that id (frontend notebook/model.ts)."""
    start = {"title": "", "cells": [{"id": new_cell_id(), "type": "code", "source": ""}], "runtime": default_runtime(),
             "device": settings.RUN_DEFAULT_DEVICE}
    error = None
    try:
        if request.GET.get("snippet"):
            start = imports.from_snippet(request.GET["snippet"], request.user)
        elif request.GET.get("import"):
            start = imports.check_import_url(request.GET["import"], host=request.get_host(), user=request.user)
    except ActionError as exc:
        error = exc.message
    return _page(request, page_data(**start, signed_in=_signed_in(request), import_error=error, draft=draft_id))


@require_GET
@never_cache
@ensure_csrf_cookie
def notebook_page(request, notebook_id):
    notebook = _own_or_404(request, notebook_id)
    return _page(request, page_data(title=notebook.title, cells=notebook.cells, runtime=notebook.runtime,
                                    device=notebook.device, signed_in=True, notebook=notebook))


@require_GET
@ensure_csrf_cookie
def shared_page(request, slug):
    shared = _shared_or_404(slug)
    url = request.build_absolute_uri(shared.get_absolute_url())
    codes = sum(cell["type"] == "code" for cell in shared.cells)
    preview = {"title": shared.title or _("JAX Playground notebook %(slug)s") % {"slug": shared.slug}, "url": url,
               "description": _("A notebook of %(cells)s cells (%(code)s of code) in the JAX Playground")
               % {"cells": len(shared.cells), "code": codes}}
    return _page(request, page_data(title=shared.title, cells=shared.cells, runtime=shared.runtime,
                                    device=shared.device, signed_in=_signed_in(request), shared=shared),
                 preview=preview)


def _download(text: str, name: str) -> HttpResponse:
    response = HttpResponse(text, content_type="application/x-ipynb+json")
    response["Content-Disposition"] = f'attachment; filename="{name}.ipynb"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def shared_ipynb(request, slug):
    shared = _shared_or_404(slug)
    text = ipynb.export(title=shared.title, cells=shared.cells, events=ipynb.run_events(shared.cells),
                        url=request.build_absolute_uri(shared.get_absolute_url()), runtime=shared.runtime,
                        device=shared.device)
    return _download(text, shared.slug)


@require_GET
@never_cache
def notebook_ipynb(request, notebook_id):
    """One's own notebook, with the outputs of the runs its cells name that its owner may see."""
    notebook = _own_or_404(request, notebook_id)
    events = ipynb.run_events(notebook.cells, lambda run_id: access_run_for_user(run_id, request.user) is not None)
    text = ipynb.export(title=notebook.title, cells=notebook.cells, events=events,
                        url=request.build_absolute_uri(notebook.get_absolute_url()), runtime=notebook.runtime,
                        device=notebook.device)
    return _download(text, f"notebook-{str(notebook.id)[:8]}")


@login_required
@require_POST
def notebook_delete(request, notebook_id):
    """The list page's Delete button (a form: the page needs no script)."""
    notebook = _own_or_404(request, notebook_id)
    do_delete_notebook(notebook)
    messages.success(request, _("Notebook deleted: %(title)s") % {"title": notebook.title or _("Untitled notebook")})
    return redirect("notebooks")
