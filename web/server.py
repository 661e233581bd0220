"""daphne with a limit on request bodies, and time for a client to answer a websocket's close:
``python -m web.server`` takes daphne's command line.

    python -m web.server -e tcp:port=8000:interface=127.0.0.1:backlog=1024 web.asgi:application

daphne (Twisted) reads a request's whole body before the application sees any of it, and keeps
one without Content-Length, or of 100 kB or more, in a temporary file on disk: a client could
fill the disk with a few large POSTs that Django then refuses. Here a body larger than
MAX_REQUEST_BYTES (web/settings.py) is refused with a 413 JSON answer as soon as Content-Length
says so, or, without one (chunked), as soon as the bytes read pass the limit; nothing of it is
kept, and the connection is closed (after a short wait that lets the client read the answer).
A body within the limit is kept in memory, never on disk. The next request is served as ever.

A websocket is bounded on both sides (``LimitedWebSocketProtocol``): daphne queues what a client
sends for its consumer without end, and Twisted buffers what is sent to a client that does not
read without end; past WS_MAX_PENDING_MESSAGES / WS_MAX_PENDING_BYTES the socket is closed
(4429), past WS_MAX_UNSENT_BYTES it is dropped.
"""

from __future__ import annotations

import faulthandler
import io
import json
import logging
import os
import sys

# daphne.server first: it installs Twisted's asyncio reactor, which must happen before anything
# imports twisted.internet.reactor (refuse() does, later).
from daphne.server import Server  # isort: skip
from daphne.cli import CommandLineInterface as DaphneCommandLine
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.ws_protocol import WebSocketProtocol
from django.utils.translation import gettext_noop
from twisted.web import http

log = logging.getLogger("web.server")

# How long a refused connection goes on being read (and what it sends thrown away) after the
# answer, so that closing it does not reset it before the client has read the 413.
LINGER_S = 1.0

# How long a websocket the server closed waits for the client's answering close frame before the
# server resets it. autobahn's default is 1 s, but it keeps its timers in buckets of whole
# seconds (txaio's batched timer takes int(now + delay)), so a timeout of 1 s fires anywhere from
# 0 to 1 s later: under a burst, a client had not yet answered the close when the reset came, and
# a client that reads in a thread (websockets' sync client) then lost the frames that arrived
# with the close, the run's `finished` among them. 5 s here is 4 to 5 s, which a slow client has.
CLOSE_HANDSHAKE_TIMEOUT_S = 5
# autobahn's opening handshake timeout is daphne's connect timeout and this much more.
OPENING_MARGIN_S = 5
WEBSOCKET_CONNECT_TIMEOUT_S = 20
# How long a SIGTERM waits for the process to end by itself: daphne cancels every application and
# waits for all of them, and Python's exit then joins the threads that ran their database calls,
# without end. A call stuck behind a lock (SQLite's busy wait is 20 s) held a restart for over
# 30 s. Past this, every thread's stack is written to the log (what it was stuck on) and the
# process exits (status 1). Below the unit's TimeoutStopSec (20 s), which would kill it unsaid.
STOP_GRACE_S = 10


# The refusal's words (web/locale): what came, and the limit it went over.
TOO_LONG = gettext_noop("the request body is %(size)s bytes")
WENT_OVER = gettext_noop("the request body went over it as it was sent")
REFUSED = gettext_noop("%(what)s; the limit is %(limit)s bytes (%(kib)s KiB)")


class LimitedRequest(WebRequest):
    refused = False

    @property
    def limit(self) -> int:
        return self.channel.factory.server.max_request_bytes

    def gotLength(self, length):
        self.body_read = 0
        # In memory: within the limit a body is small (Twisted would spool one without
        # Content-Length, or of 100 kB or more, to a temporary file).
        self.content = io.BytesIO()
        if length is not None and length > self.limit:
            self.refuse(TOO_LONG, size=length)

    def handleContentChunk(self, data):
        if self.refused:
            return  # thrown away while the answer reaches the client
        self.body_read += len(data)
        if self.body_read > self.limit:
            self.refuse(WENT_OVER)
            return
        self.content.write(data)

    def language(self) -> str:
        """The language the sender reads: its language cookie, else its Accept-Language, as a
        page's request has it (web/languages.py)."""
        from web.languages import scope_language

        headers = [(name.lower(), value) for name, values in self.requestHeaders.getAllRawHeaders()
                   for value in values]
        return scope_language({"headers": headers})

    def process(self):
        if self.refused:
            return None  # the whole body came in while lingering: it was answered already
        return super().process()

    def refuse(self, why: str, **args) -> None:
        """Answer 413 now, in the language of the page (or script) that sent it, throw away
        whatever else comes, and close the connection soon."""
        from django.utils import translation

        self.refused = True
        self.content = io.BytesIO()
        limit = self.limit
        with translation.override(self.language()):
            error = translation.gettext(REFUSED) % {"what": translation.gettext(why) % args, "limit": limit,
                                                     "kib": limit // 1024}
        what = why % args  # the log's, in English
        # No "100 Continue" after this answer (Twisted sends one after gotLength when asked).
        self.requestHeaders.removeHeader(b"Expect")
        body = json.dumps({"error": error, "limit": limit}).encode()
        head = (b"HTTP/1.1 413 Content Too Large\r\n"
                b"Content-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                b"Connection: close\r\n\r\n")
        channel = self.channel
        if not isinstance(channel, http.HTTPChannel):  # an HTTP/2 stream (TLS endpoints with h2)
            log.warning("refused a request body over %d bytes (%s) on HTTP/2", limit, what)
            self.setResponseCode(413)
            self.setHeader(b"Content-Type", b"application/json")
            self.write(body)
            self.finish()
            return
        # The request line is the channel's until the whole request has come in.
        method, path = (getattr(channel, name, b"?") for name in ("_command", "_path"))
        log.warning("refused a request body over %d bytes (%s): %s %s from %s", limit, what,
                    method.decode("ascii", "replace"), path[:200].decode("ascii", "replace"),
                    getattr(self.getClientAddress(), "host", "?"))
        transport = channel.transport
        transport.write(head + body)
        # The answer, then end of file; go on reading (and throwing away) for a moment, so that
        # the client, which may still be sending, reads the answer before the connection goes.
        try:
            transport.loseWriteConnection()
        except (AttributeError, NotImplementedError):  # a transport that cannot half-close (TLS)
            pass
        from twisted.internet import reactor

        reactor.callLater(LINGER_S, transport.abortConnection)


# A websocket closed for sending faster than it is answered: its close code and reason.
PENDING_CLOSE = 4429
PENDING_REASON = "too many messages waiting to be answered; send the next after the last is answered"


def unsent_bytes(transport) -> int | None:
    """What Twisted holds for a connection that the peer has not read yet (None: a transport that
    does not say, such as TLS's own)."""
    try:
        return len(transport.dataBuffer) - transport.offset + transport._tempDataLen
    except AttributeError:
        return None


def drop_received(queue) -> int:
    """Take back what a client sent that its consumer has not taken yet (its socket is closed for
    sending faster than it is answered): none of it is acted on, where the last of a flood of cells
    was admitted once the session it waited for was free, seconds after the close. What else waits
    (the connect, the disconnect to come) stays, in order. How many were dropped."""
    kept, dropped = [], 0
    while not queue.empty():
        message = queue.get_nowait()
        if message.get("type") == "websocket.receive":
            dropped += 1
        else:
            kept.append(message)
    for message in kept:
        queue.put_nowait(message)
    return dropped


class LimitedWebSocketProtocol(WebSocketProtocol):
    """daphne's websocket with bounds on what waits on either side of it (WS_MAX_PENDING_MESSAGES
    and WS_MAX_PENDING_BYTES of what the client sent and its consumer has not taken: the socket
    is closed, 4429; WS_MAX_UNSENT_BYTES of what was sent to a client that does not read: the
    connection is dropped). Either way the consumer hears a disconnect, as for any close."""

    over_limit = False

    def onMessage(self, payload, isBinary):
        if self.over_limit:
            return  # closing: nothing more is handed on
        queue = getattr(self, "application_queue", None)
        if queue is not None and not self.muted:
            waiting = list(queue._queue)  # at most WS_MAX_PENDING_MESSAGES: a short look
            held = sum(len(m.get("text") or m.get("bytes") or "") for m in waiting) + len(payload)
            limits = self.server.ws_limits
            if len(waiting) >= limits["messages"] or held > limits["bytes"]:
                self.over_limit = True
                log.warning("closed a websocket from %s with %d messages (%d bytes) waiting to be answered",
                            self.client_addr, len(waiting), held)
                self.sendClose(code=PENDING_CLOSE, reason=PENDING_REASON)
                drop_received(queue)
                return
        super().onMessage(payload, isBinary)

    def handle_reply(self, message):
        # daphne closes with the code alone: a consumer's reason ("no such run", why a token or a
        # start was refused) reaches a script's client with it here, cut to the 123 bytes a close
        # frame holds.
        if (message.get("type") == "websocket.close" and message.get("reason")
                and self.state != self.STATE_CONNECTING):
            reason = str(message["reason"]).encode("utf-8")[:123].decode("utf-8", errors="ignore")
            self.sendClose(code=message.get("code") or 1000, reason=reason)
            return
        super().handle_reply(message)

    def serverSend(self, content, binary=False):
        unsent = unsent_bytes(self.transport) if self.transport is not None else None
        if unsent is not None and unsent > self.server.ws_limits["unsent"]:
            if not self.over_limit:
                self.over_limit = True
                log.warning("dropped a websocket to %s that left %d bytes unread", self.client_addr, unsent)
                self.dropConnection(abort=True)
            return
        super().serverSend(content, binary)


class LimitedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = LimitedRequest
        return protocol


class LimitedServer(Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from django.conf import settings

        self.max_request_bytes = settings.MAX_REQUEST_BYTES
        self.ws_limits = {"messages": settings.WS_MAX_PENDING_MESSAGES, "bytes": settings.WS_MAX_PENDING_BYTES,
                          "unsent": settings.WS_MAX_UNSENT_BYTES}

    def kill_all_applications(self):
        # The shutdown's first step (a "before shutdown" trigger): from here it has STOP_GRACE_S.
        log.info("stopping: the process exits within %d s", STOP_GRACE_S)
        faulthandler.dump_traceback_later(STOP_GRACE_S, exit=True, file=sys.stderr)
        return super().kill_all_applications()

    # daphne's run() makes its HTTPFactory itself: this one is made instead.
    @property
    def http_factory(self):
        return self._http_factory

    @http_factory.setter
    def http_factory(self, factory):
        self._http_factory = LimitedHTTPFactory(self) if type(factory) is HTTPFactory else factory

    # ... and sets the options of the websocket factory it makes; one more is set here.
    @property
    def ws_factory(self):
        return self._ws_factory

    @ws_factory.setter
    def ws_factory(self, factory):
        original = factory.setProtocolOptions

        def set_options(**options):
            # autobahn resets a socket the application has not accepted within its opening
            # handshake timeout (daphne: 5 s, so 4 to 5 s), with no answer at all; daphne's own
            # connect timeout (20 s) answers 403 instead. A busy server that accepts after 4 s
            # is slow, not broken: the socket is let in, and a stuck one gets daphne's answer.
            opening = max(options.pop("openHandshakeTimeout", 0), self.websocket_connect_timeout + OPENING_MARGIN_S)
            original(**options, openHandshakeTimeout=opening, closeHandshakeTimeout=CLOSE_HANDSHAKE_TIMEOUT_S)

        factory.setProtocolOptions = set_options
        if factory.protocol is WebSocketProtocol:
            factory.protocol = LimitedWebSocketProtocol
        self._ws_factory = factory


class CommandLineInterface(DaphneCommandLine):
    server_class = LimitedServer

    def __init__(self):
        super().__init__()
        # daphne's command line refuses (403) a socket its application has not accepted within
        # 5 s; under a burst a busy process accepts later than that (the consumer accepts first
        # thing). Its Server's own default, 20 s, is the default here too.
        self.parser.set_defaults(websocket_connect_timeout=WEBSOCKET_CONNECT_TIMEOUT_S)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
