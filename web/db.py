"""Database calls from websocket consumers, on a connection kept open between calls.

Channels' ``database_sync_to_async`` closes the thread's connections after every call unless
CONN_MAX_AGE keeps them (it is 0: under ASGI each HTTP request has a thread of its own, whose
connection would outlive it). A consumer's calls have no request around them: they all run on
asgiref's one thread-sensitive thread, so there is one connection to keep, and closing and
opening it again was a quarter of starting a run on a run socket (SQLite: 1.1 ms to close,
about 1 ms to open with its pragmas; PostgreSQL: a trip to the pool and back).

``socket_db`` keeps that connection while it is usable, as Django keeps one under CONN_MAX_AGE:
one that saw an error is checked and closed if broken, one left with its autocommit changed
(a transaction left open) is closed. Outside that one thread (a thread-sensitive context of its own)
it closes them as ``database_sync_to_async`` does.
"""

from __future__ import annotations

import threading

from asgiref.sync import SyncToAsync
from channels.consumer import get_handler_name
from django.db import close_old_connections, connections


def _ours() -> bool:
    """Whether this is asgiref's one thread for thread-sensitive calls outside any context."""
    return threading.current_thread() in getattr(SyncToAsync.single_thread_executor, "_threads", ())


def _keep_or_close() -> None:
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        conn.close_at = None  # not obsolete by age (CONN_MAX_AGE=0 made it so at once)
        conn.close_if_unusable_or_obsolete()


class SocketDatabaseSyncToAsync(SyncToAsync):
    def thread_handler(self, loop, *args, **kwargs):
        if not _ours():
            close_old_connections()
            try:
                return super().thread_handler(loop, *args, **kwargs)
            finally:
                close_old_connections()
        _keep_or_close()
        try:
            return super().thread_handler(loop, *args, **kwargs)
        finally:
            _keep_or_close()


socket_db = SocketDatabaseSyncToAsync


class SocketDatabase:
    """Mixed into a websocket consumer (before Channels' class) whose database calls all go
    through ``socket_db``. Channels' ``dispatch`` first hops to the thread of thread-sensitive
    calls to close old connections, for every message a socket receives, though it has no call
    to make; ``socket_db`` does that check on that thread before and after each call already.
    The hop cost each run started on a socket, and each cell sent on a session's, some 0.3 ms of
    the web process's CPU and of the person's wait."""

    async def dispatch(self, message):
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
