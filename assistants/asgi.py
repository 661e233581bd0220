"""The MCP endpoint's mount in front of Django, and who its requests act as.

    HTTP /mcp, /mcp/…    the MCP app (server.py), once the Host is one of ALLOWED_HOSTS and an
                         Origin, when there is one, is this site's own (as a websocket's is,
                         web/origins.py; scripts and assistants' clients send none); POST only
    everything else      Django, as before

The SDK's session manager serves requests only inside its ``run()`` context, which an ASGI
server enters with the lifespan events; daphne sends none. So the first request of an event
loop starts it in a task of its own, which holds it open for the rest of the process's life, and
every request waits for it to be ready. That first request also imports the server (server.py),
in a thread: the SDK costs a web process half a second to import and 30 MiB, which one that
never serves /mcp never pays, and the event loop goes on meanwhile. It is stateless: no MCP
session outlives its request, so any web process behind the load balancer answers any request.

Who a request acts as is decided as the API decides it (``web.api.authenticate``, then
``web.clients.request_client``): a Bearer token's account, else anonymous, counted against the
address as a script's requests are. A session cookie counts for nothing here: an assistant's
client is not a browser, and a page of another site must never act as its visitor through it.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import weakref
from dataclasses import dataclass

from asgiref.sync import SyncToAsync
from django.contrib.auth.models import AnonymousUser
from django.core.handlers.asgi import ASGIRequest
from django.utils import translation
from django.utils.module_loading import import_string

from web.api import authenticate
from web.clients import Client, request_client
from web.db import socket_db
from web.errors import ActionError
from web.languages import scope_language
from web.origins import origin_allowed, own_origin

log = logging.getLogger("playground")

PATH = "/mcp"


def is_mcp(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")


def in_thread(fn) -> SyncToAsync:
    """``fn`` run in a thread of the pool, its database connections closed after it (as a
    request's are): a tool's calls of the actions never block the event loop, nor wait for one
    another or for the websockets' one database thread."""
    return socket_db(fn, thread_sensitive=False)


@dataclass(frozen=True)
class Caller:
    """Who a request acts as: ``user`` (the token's account, or anonymous) and ``client`` (whom
    its limits count against), the ``language`` its refusals are said in, the ``base_url`` its
    links start with, and ``refused``: the API's 401 words for a token that is not valid."""

    user: object
    client: Client
    language: str
    base_url: str
    refused: str | None = None

    def url(self, path: str) -> str:
        return self.base_url + path


def identify(scope) -> Caller:
    """The caller of an HTTP request (its ASGI scope), decided by the API's own authenticator on
    the request Django would have made of it. In a thread: a token is looked up in the database."""
    request = ASGIRequest(scope, io.BytesIO())
    request.user = AnonymousUser()  # the session is not consulted (see the module's docstring)
    language = scope_language(scope)
    refused = None
    with translation.override(language):
        try:
            authenticate(request)
        except ActionError as exc:
            refused = exc.message
    return Caller(user=request.user, client=request_client(request), language=language,
                  base_url=request.build_absolute_uri("/").rstrip("/"), refused=refused)


async def caller_of(request) -> Caller:
    """The caller of the HTTP request a tool answers (the SDK's request object, which carries
    the scope)."""
    return await in_thread(identify)(request.scope)


# The mount ---------------------------------------------------------------------------------------

class Endpoint:
    """The MCP app of one event loop, its session manager (a new one from ``make_manager``) held
    running by a task of its own."""

    def __init__(self, make_manager):
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        self.manager = make_manager()
        self.app = StreamableHTTPASGIApp(self.manager)
        self.ready = asyncio.Event()
        self.failed = False
        self.task = asyncio.create_task(self._hold())

    async def _hold(self) -> None:
        try:
            async with self.manager.run():
                self.ready.set()
                await asyncio.Future()  # until the loop ends
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the MCP endpoint's session manager stopped")
        finally:
            self.failed = True
            self.ready.set()

    async def __call__(self, scope, receive, send) -> None:
        await self.ready.wait()
        if self.failed:
            await _answer(send, 503, "the assistants' endpoint is not running; try again in a few seconds")
            return
        await self.app(scope, receive, send)


def _header(scope, name: bytes) -> str | None:
    return next((value.decode("latin1") for key, value in scope.get("headers", ()) if key == name), None)


async def _answer(send, status: int, message: str, headers: tuple = ()) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class AssistantsMount:
    """HTTP requests for ``/mcp`` to the MCP endpoint, the rest to ``app`` (Django)."""

    def __init__(self, app, make_manager: str):
        self.app = app
        self.make_manager = make_manager  # a dotted path, imported by the first request
        self.factory = None
        self.importing = asyncio.Lock()
        self.endpoints: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Endpoint] = weakref.WeakKeyDictionary()

    async def endpoint(self) -> Endpoint:
        """The endpoint of the running event loop (daphne has one), started by its first request
        (and again after one that stopped)."""
        if self.factory is None:
            async with self.importing:
                if self.factory is None:
                    self.factory = await asyncio.to_thread(import_string, self.make_manager)
        loop = asyncio.get_running_loop()
        found = self.endpoints.get(loop)
        if found is None or found.failed:
            found = self.endpoints[loop] = Endpoint(self.factory)
        return found

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not is_mcp(scope.get("path", "")):
            return await self.app(scope, receive, send)
        # DNS rebinding: a name of someone else's pointed at this server is not one of ours.
        if own_origin(scope) is None:
            return await _answer(send, 400, "the Host header names no host this site serves (ALLOWED_HOSTS)")
        origin = _header(scope, b"origin")
        if origin is not None and not origin_allowed(scope, origin):
            return await _answer(send, 403, "a page of another site may not call this endpoint; "
                                            "an assistant's client sends no Origin")
        # Stateless, there is no stream to open (GET) nor session to end (DELETE): the transport
        # allows a 405 for both, and an open GET would otherwise hold its connection for good.
        if scope.get("method") != "POST":
            return await _answer(send, 405, "send MCP's JSON-RPC messages with POST", ((b"allow", b"POST"),))
        return await (await self.endpoint())(scope, receive, send)


def mount(app, make_manager: str = "assistants.server.session_manager") -> AssistantsMount:
    """``app`` behind the MCP endpoint, whose session managers the function at the dotted path
    ``make_manager`` makes."""
    return AssistantsMount(app, make_manager)
