"""Pages and the JSON API. A view parses, checks access, calls one action and responds."""

from __future__ import annotations

import time

from django.conf import settings
import re
import zlib

from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.cache import patch_vary_headers
from django.shortcuts import render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from web import clients
from web.api import api, parse_json, query_int
from web.openapi import schema

from . import devices, runtimes
from .access import access_run_for_user
from .gallery import examples
from .actions.analyse import check_analyse, do_analyse
from .actions.format import check_format
from .actions.lint import check_lint, do_lint
from .actions.runs import check_cancel_run, check_start_run, profile_building, profile_of
from .actions.sessions import check_create_session, check_end_session, check_run_cell, session_state
from .access import access_session
from .serializers import run_detail, run_summary, session_detail


@api("POST")
def api_format(request):
    """The code, formatted by ruff (the editor's Shift+Alt+F)."""
    return JsonResponse({"code": check_format(parse_json(request), client=clients.request_client(request))})


@api("POST")
async def api_analyse(request):
    """The editor's completion, a completion's details, signature help or docs on hover, from
    the analysers on the executor nodes."""
    from asgiref.sync import sync_to_async

    client = await sync_to_async(clients.request_client)(request)
    return JsonResponse(await do_analyse(check_analyse(parse_json(request), client=client)))


@api("POST")
async def api_lint(request):
    """The problems of the editor's code: syntax errors and pyflakes' lints, for its markers."""
    from asgiref.sync import sync_to_async

    client = await sync_to_async(clients.request_client)(request)
    code = await sync_to_async(check_lint, thread_sensitive=False)(parse_json(request), client=client)
    return JsonResponse(await do_lint(code))


@api("GET", "POST", "PUT", "PATCH", "DELETE")
def api_not_found(request, rest: str = ""):
    raise Http404(_("no such endpoint; the API is described at /api/openapi.json"))


def page_context(request) -> dict:
    """What every page with the editor shows: the unsandboxed banner, the gallery (in the page's
    language)."""
    return {"unsandboxed": devices.unsandboxed(devices.describe_all()), "examples": examples(get_language()),
            "runtimes": runtimes.choices()}


@require_GET
@ensure_csrf_cookie
def index(request):
    return render(request, "playground/index.html", page_context(request))


@api("GET")
def api_devices(request):
    return JsonResponse({
        # Each kind with its specific kinds online (gpu:h200 under gpu); a kind whose workers
        # stopped beating is offline after EXECUTOR_ONLINE_WINDOW_S.
        "devices": devices.describe_all(),
        # Events carry server timestamps: the page sets its clock by this to show how long a
        # run it picks up again (after a reload) has been going.
        "server_time": round(time.time(), 3),
    })


@api("GET")
def api_runtimes(request):
    return JsonResponse({
        # Each runtime of the catalog, with the kinds whose workers serve it now; a retired id
        # (an alias of its successor) under "retired".
        "runtimes": runtimes.describe_all(),
        "default": runtimes.default(),
        "retired": runtimes.retired(),
    })


@api("POST")
def api_runs(request):
    run = check_start_run(parse_json(request), client=clients.request_client(request), owner=request.user)
    return JsonResponse(run_summary(run), status=201)


@api("GET")
def api_run(request, run_id):
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404(_("no such run"))
    after = query_int(request, "after", 0, minimum=0)
    limit = query_int(request, "limit", settings.RUN_EVENTS_PAGE, minimum=1, maximum=settings.RUN_EVENTS_PAGE)
    return JsonResponse(run_detail(run, after=after, limit=limit))


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding header takes gzip (``gzip`` or ``*``, not at ``q=0``)."""
    quality = {}
    for part in header.split(","):
        coding, _sep, params = part.strip().partition(";")
        found = re.search(r"q\s*=\s*([0-9.]+)", params)
        try:
            quality[coding.strip().lower()] = float(found.group(1)) if found else 1.0
        except ValueError:
            quality[coding.strip().lower()] = 0.0
    return quality.get("gzip", quality.get("x-gzip", quality.get("*", 0.0))) > 0


def _inflated(data: bytes, chunk: int = 256 * 1024):
    """A gzipped trace, inflated a piece at a time (never whole in memory)."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    rest = data
    while rest and not inflate.eof:
        yield inflate.decompress(rest, chunk)
        rest = inflate.unconsumed_tail
    yield inflate.flush()


@api("GET", "HEAD")
def api_run_profile(request, run_id):
    """A profiled run's trace: Chrome Trace Event Format JSON, gzipped on the wire when the client
    accepts it (browsers, ``curl --compressed``), inflated a piece at a time for one that does
    not; ``?download=1`` is the .json.gz file itself, for Perfetto or chrome://tracing. It is the
    run's own data, which its code could have written: served as data only (an attachment, a
    sandboxing CSP), never as anything a browser would render."""
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404(_("no such run"))
    data = profile_of(run)
    if data is None:
        # Built after the run's end (executor/profiles.py): 202 while it is being built.
        pending = profile_building(run)
        if pending is None:
            data = profile_of(run)  # built and moved to the database between the two reads
        elif pending.get("building"):
            response = JsonResponse({"building": True, "message": _("building the timeline…")}, status=202)
            response["Retry-After"] = "1"
            response["Cache-Control"] = "no-store"
            return response
        else:
            raise Http404(str(pending.get("error") or _("the trace could not be built")))
    if data is None:
        raise Http404(_('this run has no profile: it was not run with options.profile, its profile failed (its '
                        '"profile" event says why), or it is no longer kept'))
    name = f"run-{run.id}.trace.json"
    if request.GET.get("download") in ("1", "true", "yes"):
        response = HttpResponse(data, content_type="application/gzip")
        name += ".gz"
    elif accepts_gzip(request.headers.get("Accept-Encoding", "")):
        response = HttpResponse(data, content_type="application/json")
        response["Content-Encoding"] = "gzip"
    else:
        response = StreamingHttpResponse(_inflated(data), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    patch_vary_headers(response, ("Accept-Encoding",))
    response["Cache-Control"] = "private, max-age=86400"  # a run's trace never changes
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    return response


@api("POST")
def api_run_cancel(request, run_id):
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404(_("no such run"))
    status = check_cancel_run(run, who=clients.request_client(request).person)
    return JsonResponse({"id": str(run.id), "status": status}, status=202)


@api("POST")
def api_sessions(request):
    """A notebook session: a sandboxed runner that keeps its cells' state (started by its first cell)."""
    body = parse_json(request) if request.body else {}
    session = check_create_session(body, client=clients.request_client(request), owner=request.user)
    return JsonResponse(session_detail(session, session_state(session)), status=201)


def _own_session(request, session_id):
    session = access_session(session_id, clients.request_client(request).person)
    if session is None:
        raise Http404(_("no such session"))
    return session


@api("GET", "DELETE")
def api_session(request, session_id):
    session = _own_session(request, session_id)
    if request.method == "DELETE":
        check_end_session(session)
        return JsonResponse({"id": str(session.id), "state": "stopped"})
    return JsonResponse(session_detail(session, session_state(session)))


@api("POST")
def api_session_cells(request, session_id):
    """A cell, run in the session: answered as POST /api/runs answers a run."""
    session = _own_session(request, session_id)
    run = check_run_cell(session, parse_json(request), client=clients.request_client(request), owner=request.user)
    return JsonResponse(run_summary(run), status=201)


@api("GET")
def api_openapi(request):
    return JsonResponse(schema())
