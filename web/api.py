"""The JSON API's furniture, shared by every app's views and actions: the ``api`` decorator
(methods, who is asking, errors as JSON), the body and query parsers, the one validator of a
text field (``text``), and the address a request's limits count against."""

from __future__ import annotations

import inspect
import json
import logging
from functools import cache, wraps

from asgiref.sync import sync_to_async

import redis.exceptions
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.csrf import csrf_exempt

from . import clients
from .errors import ActionError

log = logging.getLogger("playground")

QUEUE_UNREACHABLE = gettext_lazy("the playground's queue is unreachable for a moment; try again in a few seconds")


def error(message: str, status: int, headers: dict | None = None, data: dict | None = None) -> JsonResponse:
    """A JSON error: ``error`` is what a person reads, in the request's language (a lazy text is
    made one now); the other fields are for programs and stay as they are."""
    response = JsonResponse({"error": str(message), **(data or {})}, status=status)
    for k, v in (headers or {}).items():
        response[k] = v
    return response


def api(*methods: str):
    """A JSON endpoint: only these methods; the caller authenticated (``accounts.auth``: a Bearer
    token, else the session, whose unsafe requests must carry the CSRF token; anonymous requests
    need none); ActionError and 404 become JSON errors."""

    def decorate(view):
        def refused(request):
            if request.method not in methods:
                return error(_("method %(method)s not allowed; use %(methods)s")
                             % {"method": request.method, "methods": ", ".join(methods)}, 405,
                             {"Allow": ", ".join(methods)})
            return None

        def failed(request, exc):
            if isinstance(exc, ActionError):
                return error(exc.message, exc.status, exc.headers, exc.data)
            if isinstance(exc, Http404):
                return error(str(exc) or _("not found"), 404)
            log.warning("Redis is unreachable (%s); %s %s answered 503", exc, request.method, request.path)
            return error(QUEUE_UNREACHABLE, 503, {"Retry-After": "5"})

        handled = (ActionError, Http404, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

        # Exempt from the middleware's CSRF check: the authenticator runs it itself, for
        # session-authenticated requests only, and answers in JSON.
        if inspect.iscoroutinefunction(view):
            # An async view (one that waits on something else, as the analyser) waits in the
            # event loop, not in the one thread Django gives synchronous views.
            @csrf_exempt
            @wraps(view)
            async def async_wrapper(request, *args, **kwargs):
                if (answer := refused(request)) is not None:
                    return answer
                try:
                    await sync_to_async(authenticate)(request)
                    return await view(request, *args, **kwargs)
                except handled as exc:
                    return failed(request, exc)

            return async_wrapper

        @csrf_exempt
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if (answer := refused(request)) is not None:
                return answer
            try:
                authenticate(request)
                return view(request, *args, **kwargs)
            except handled as exc:
                return failed(request, exc)

        return wrapper

    return decorate


def authenticate(request) -> None:
    """The API's authenticator, named by ``settings.API_AUTHENTICATE`` (as Django names its
    authentication backends) so that this library imports no app: it sets ``request.user`` from a
    bearer token or the session, or raises an ActionError."""
    _authenticator()(request)


@cache
def _authenticator():
    return import_string(settings.API_AUTHENTICATE)


def parse_json(request):
    if request.content_type not in ("application/json", ""):
        raise ActionError(_("send the body as JSON (Content-Type: application/json)"), status=415)
    try:
        body = request.body
    except RequestDataTooBig:
        raise ActionError(
            _("the body is over %(body_kib)s KiB; code may be at most %(code_bytes)s bytes (%(code_kib)s KiB)")
            % {"body_kib": settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024, "code_bytes": settings.RUN_MAX_CODE_BYTES,
               "code_kib": settings.RUN_MAX_CODE_BYTES // 1024}
        ) from None
    try:
        return json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ActionError(_("the body is not valid JSON: %(reason)s") % {"reason": exc}) from None
    except RecursionError:
        raise ActionError(_("the body is not valid JSON here: it is nested too deeply")) from None


def plain_text(value: str, name: str) -> str:
    """``value`` as text a person can have typed: a lone surrogate (which JSON can carry) and a
    NUL (which no source file or title holds, and PostgreSQL refuses to store) are a 400."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ActionError(_("'%(name)s' is not valid Unicode text (a lone surrogate at character %(at)s)")
                          % {"name": name, "at": exc.start}) from None
    if "\x00" in value:
        raise ActionError(_("'%(name)s' holds a NUL character (at character %(at)s)")
                          % {"name": name, "at": value.index(chr(0))})
    return value


def text(payload: dict, name: str, limit: int, *, required: bool = False, strip: bool = False,
         unit: str = "bytes", default: str | None = None, status: int = 400) -> str | None:
    """A string field of a JSON object, at most ``limit`` ``unit`` long ("bytes" of UTF-8 or
    "characters"), stripped first with ``strip``. Absent or null: ``default``, or a 400 "is
    required" when ``required``; not a string, a 400; too long, ``status``."""
    value = payload.get(name)
    if value is None:
        if required:
            raise ActionError(_("'%(name)s' is required") % {"name": name})
        return default
    if not isinstance(value, str):
        raise ActionError(_("'%(name)s' must be a string") % {"name": name})
    plain_text(value, name)
    if strip:
        value = value.strip()
    size = len(value.encode("utf-8")) if unit == "bytes" else len(value)
    if size > limit:
        raise ActionError(_too_long(name, size, unit, limit), status=status)
    return value


def query_int(request, name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = request.GET.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ActionError(_("'%(name)s' must be an integer") % {"name": name}) from None
    if value < minimum or (maximum is not None and value > maximum):
        if maximum is not None:
            raise ActionError(_("'%(name)s' must be from %(minimum)s to %(maximum)s")
                              % {"name": name, "minimum": minimum, "maximum": maximum})
        raise ActionError(_("'%(name)s' must be at least %(minimum)s") % {"name": name, "minimum": minimum})
    return value


def _too_long(name: str, size: int, unit: str, limit: int) -> str:
    """``text``'s refusal of a value over its limit, in ``unit`` (bytes or characters)."""
    values = {"name": name, "size": size, "limit": limit}
    if unit == "characters":
        return _("'%(name)s' is %(size)s characters; the limit is %(limit)s") % values
    return _("'%(name)s' is %(size)s bytes; the limit is %(limit)s") % values


def client_address(request) -> str:
    """The address a client's limits count against (see ``clients.client_address``)."""
    return clients.client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
