"""Pages and the JSON API. A view parses, checks access, calls one action and responds."""

from __future__ import annotations

import json
import logging
import time
from functools import wraps

import redis.exceptions
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie
from django.views.decorators.http import require_GET

from accounts.auth import authenticate_api_request

from . import clients, devices
from .access import access_run_for_user
from .gallery import examples
from .actions.format import check_format
from .actions.runs import ActionError, check_cancel_run, check_start_run
from .openapi import schema
from .serializers import run_detail, run_summary

log = logging.getLogger("playground")


def error(message: str, status: int, headers: dict | None = None, data: dict | None = None) -> JsonResponse:
    response = JsonResponse({"error": message, **(data or {})}, status=status)
    for k, v in (headers or {}).items():
        response[k] = v
    return response


def api(*methods: str):
    """A JSON endpoint: only these methods; the caller authenticated (``accounts.auth``: a Bearer
    token, else the session, whose unsafe requests must carry the CSRF token; anonymous requests
    need none); ActionError and 404 become JSON errors."""

    def decorate(view):
        # Exempt from the middleware's CSRF check: authenticate_api_request runs it itself, for
        # session-authenticated requests only, and answers in JSON.
        @csrf_exempt
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                return error(f"method {request.method} not allowed; use {', '.join(methods)}", 405,
                             {"Allow": ", ".join(methods)})
            try:
                authenticate_api_request(request)
                return view(request, *args, **kwargs)
            except ActionError as exc:
                return error(exc.message, exc.status, exc.headers, exc.data)
            except Http404 as exc:
                return error(str(exc) or "not found", 404)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                log.warning("Redis is unreachable (%s); %s %s answered 503", exc, request.method, request.path)
                return error("the playground's queue is unreachable for a moment; try again in a few seconds",
                             503, {"Retry-After": "5"})

        return wrapper

    return decorate


def parse_json(request):
    if request.content_type not in ("application/json", ""):
        raise ActionError("send the body as JSON (Content-Type: application/json)", status=415)
    try:
        body = request.body
    except RequestDataTooBig:
        raise ActionError(
            f"the body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024} KiB; code may be at "
            f"most {settings.RUN_MAX_CODE_BYTES} bytes ({settings.RUN_MAX_CODE_BYTES // 1024} KiB)"
        ) from None
    try:
        return json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ActionError(f"the body is not valid JSON: {exc}") from None


def client_address(request) -> str:
    """The address a client's limits count against (see ``clients.client_address``)."""
    return clients.client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


@api("POST")
def api_format(request):
    """The code, formatted by ruff (the editor's Shift+Alt+F)."""
    return JsonResponse({"code": check_format(parse_json(request), client=clients.request_client_key(request))})


@api("GET", "POST", "PUT", "PATCH", "DELETE")
def api_not_found(request, rest: str = ""):
    raise Http404("no such endpoint; the API is described at /api/openapi.json")


def page_context(request) -> dict:
    """What every page with the editor shows: the unsandboxed banner, the gallery."""
    return {"unsandboxed": devices.unsandboxed(devices.describe_all()), "examples": examples()}


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


@api("POST")
def api_runs(request):
    run = check_start_run(parse_json(request), client=client_address(request), owner=request.user)
    return JsonResponse(run_summary(run), status=201)


@api("GET")
def api_run(request, run_id):
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404("no such run")
    after = query_int(request, "after", 0, minimum=0)
    limit = query_int(request, "limit", settings.RUN_EVENTS_PAGE, minimum=1, maximum=settings.RUN_EVENTS_PAGE)
    return JsonResponse(run_detail(run, after=after, limit=limit))


def query_int(request, name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = request.GET.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ActionError(f"'{name}' must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
        raise ActionError(f"'{name}' must be {bound}")
    return value


@api("POST")
def api_run_cancel(request, run_id):
    run = access_run_for_user(run_id, request.user)
    if run is None:
        raise Http404("no such run")
    from snippets.access import check_may_cancel

    check_may_cancel(run, clients.request_client_key(request))
    status = check_cancel_run(run)
    return JsonResponse({"id": str(run.id), "status": status}, status=202)


@api("GET")
def api_openapi(request):
    return JsonResponse(schema())
