"""A node's notebook cells, read from its own Redis stream (``sessionstate.node_stream``) rather
than a Celery queue: the web side appends a cell with one XADD when its run is committed, and a
thread here blocks on XREADGROUP, handing each cell to ``Executor.execute`` in a thread of its own
(it runs in its session's runner, which already holds its slot). Celery's publish cost a cell
about 7 ms on its way; the stream's append costs one round trip.

    web ─ XADD cells:node:<name> ─▶ CellReader (XREADGROUP, group "node") ─▶ a thread: execute(...)

What the node's Celery queue of sessions gave, the stream keeps: a cell is claimed as any run
(a cancel before it starts wins), stamped ``received``, and one that came while the node drains
ends with its session ("its node is stopping"), as a cell Celery handed it then did. The group's
place in the stream outlives a restart, so cells sent meanwhile are read then (and ended: the
sessions went with the runners). A cell sent to a node that is gone waits unread, and ends as any
queued run no one takes (the web side cancels it once it finds the session's node lost, the
watchdog after RUN_QUEUE_TIMEOUT_S). Each entry is acknowledged as it is read, before its cell
runs: a cell is taken once, never twice.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import redis

from . import sessionstate

log = logging.getLogger("executor")

# How long one read blocks: how soon the reader sees that it is told to stop.
BLOCK_MS = 1000


class CellReader:
    """The thread that reads this node's cells, and the cells' threads."""

    def __init__(self, executor, redis_client, name: str):
        self.executor = executor
        self.redis = redis_client
        self.name = name
        self.key = sessionstate.node_stream(name)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cells: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._group_made = False

    def start(self) -> CellReader:
        self._thread = threading.Thread(target=self._loop, name="cells", daemon=True)
        self._thread.start()
        return self

    def stop(self, wait_s: float) -> None:
        """Read no more, and wait up to ``wait_s`` for the cells in progress to end (as Celery's
        warm shutdown waits for its tasks): the node's runners go only after."""
        self._stop.set()
        deadline = time.monotonic() + wait_s
        if self._thread is not None:
            self._thread.join(timeout=BLOCK_MS / 1000 + 1)
        for cell in list(self._cells):
            cell.join(timeout=max(0.0, deadline - time.monotonic()))

    def _loop(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            try:
                self._ensure_group()
                answer = self.redis.xreadgroup(sessionstate.NODE_STREAM_GROUP, self.name, {self.key: ">"},
                                               count=16, block=BLOCK_MS)
                delay = 0.1
            except redis.exceptions.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    log.warning("reading this node's cells failed (%s)", exc)
                    self._stop.wait(delay)
                self._group_made = False  # the stream expired or was deleted: made again
                continue
            except redis.exceptions.RedisError as exc:  # a restart: read again when it is back
                log.warning("reading this node's cells failed (%s); again in %.1f s", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            for _stream, entries in answer or []:
                for entry_id, fields in entries:
                    self._take(entry_id, fields)

    def _ensure_group(self) -> None:
        if self._group_made:
            return
        try:
            # From the stream's start: cells sent while this node was away are read, as its
            # Celery queue kept them.
            self.redis.xgroup_create(self.key, sessionstate.NODE_STREAM_GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_made = True

    def _take(self, entry_id, fields: dict) -> None:
        try:
            # Acknowledged and deleted in one round trip: what stays in the stream is only what
            # no node has read (a node away), which its cap bounds.
            pipe = self.redis.pipeline(transaction=False)
            pipe.xack(self.key, sessionstate.NODE_STREAM_GROUP, entry_id)
            pipe.xdel(self.key, entry_id)
            pipe.execute()
        except redis.exceptions.RedisError as exc:  # taken all the same: a claim runs it once
            log.warning("could not acknowledge cell entry %s (%s)", entry_id, exc)
        try:
            message = json.loads(fields[b"m"])
            run_id, code = str(message["run_id"]), str(message["code"])
        except (KeyError, TypeError, ValueError):
            log.warning("dropping a malformed cell entry %s of this node's stream", entry_id)
            return
        cell = threading.Thread(target=self._run, args=(run_id, code, message), name=f"cell-{run_id[:8]}",
                                daemon=True)
        with self._lock:
            self._cells.add(cell)
        cell.start()

    def _run(self, run_id: str, code: str, message: dict) -> None:
        try:
            self.executor.execute(run_id, code, message.get("options") or {}, message.get("limits") or {},
                                  message.get("grade"), message.get("session"), stdin=message.get("stdin") or "")
        except Exception:  # the claim's watchdog ends a cell whose executor failed
            log.exception("cell %s failed outside its run", run_id)
        finally:
            with self._lock:
                self._cells.discard(threading.current_thread())
