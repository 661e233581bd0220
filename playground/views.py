"""Pages and the JSON API. A view parses, checks access, calls one action and responds."""

from __future__ import annotations

import time

from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import render
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
from .actions.runs import check_cancel_run, check_start_run
from .serializers import run_detail, run_summary


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
    raise Http404("no such endpoint; the API is described at /api/openapi.json")


def page_context(request) -> dict:
    """What every page with the editor shows: the unsandboxed banner, the gallery."""
    return {"unsandboxed": devices.unsandboxed(devices.describe_all()), "examples": examples(),
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
        raise Http404("no such run")
    after = query_int(request, "after", 0, minimum=0)
    limit = query_int(request, "limit", settings.RUN_EVENTS_PAGE, minimum=1, maximum=settings.RUN_EVENTS_PAGE)
    return JsonResponse(run_detail(run, after=after, limit=limit))


@api("POST")
def api_run_cancel(request, run_id):
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404("no such run")
    status = check_cancel_run(run, who=clients.request_client(request).person)
    return JsonResponse({"id": str(run.id), "status": status}, status=202)


@api("GET")
def api_openapi(request):
    return JsonResponse(schema())
