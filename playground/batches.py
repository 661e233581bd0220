"""The recorder's reading of the executors' event batches (executor/submit.py ``send_batch``): a
thread of the recorder's worker process blocks on XREADGROUP on the stream beside its queue, and
records what one read brought in one transaction, each run in a savepoint of its own.

    executor ─ XADD record:batches ─▶ BatchReader (XREADGROUP, group "recorders") ─▶ do_record_events

As a Celery task per batch did, and cheaper: a task's delivery, trace and acknowledgement, and a
commit for each batch, cost more of the recorder's CPU than writing the events. What the tasks
gave stays:
- **Idempotent, any order.** A run's batches may be read by two recorders or twice (a retry);
  a seq already stored is skipped and a run's status only moves forward.
- **One bad batch holds up no other.** A run whose recording raises is rolled back to its
  savepoint; the rest of the read commits. Its entry is not acknowledged, and is taken again
  (by any recorder) once RETRY_IDLE_MS has passed, MAX_DELIVERIES times in all; then it is
  dropped with an error logged, and the watchdog completes the run's row from its log.
- **A recorder that dies loses nothing.** What it read and did not acknowledge is taken again
  by the others, or by itself once it is back, the same way.
- Runs are written in the order of their ids, so two recorders lock rows in one order.
An entry is acknowledged and deleted once its run's events are committed: the stream holds only
what waits (the recorder's queue depth in the metrics, web/fleet.py).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

import redis
from django.db import close_old_connections, connection, transaction

from executor import logs, submit

from .actions.runs import do_record_events
from .metrics import observe_recorded

log = logging.getLogger("playground")

READ_COUNT = 256
# How long one read blocks: how soon the reader sees that it is told to stop.
BLOCK_MS = 1000
RETRY_IDLE_MS = 2000
MAX_DELIVERIES = 6  # the first and five more, as the recorder's tasks were retried


class BatchReader:
    def __init__(self, redis_client, queue: str, name: str):
        self.redis = redis_client
        self.key = submit.record_stream(queue)
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._group_made = False
        self._swept = 0.0

    def start(self) -> BatchReader:
        self._thread = threading.Thread(target=self._loop, name="batches", daemon=True)
        self._thread.start()
        return self

    def stop(self, wait_s: float = BLOCK_MS / 1000 + 5) -> None:
        """Read no more; the read in progress is recorded first (what is not is taken again)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=wait_s)

    def _loop(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            try:
                self._ensure_group()
                entries = self._retries()
                if not entries:
                    answer = self.redis.xreadgroup(submit.RECORD_GROUP, self.name, {self.key: ">"},
                                                   count=READ_COUNT, block=BLOCK_MS)
                    entries = [entry for _stream, read in answer or [] for entry in read]
                delay = 0.1
            except redis.exceptions.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    log.warning("reading the recorder's batches failed (%s)", exc)
                    self._stop.wait(delay)
                self._group_made = False  # Redis restarted empty: the group is made again
                continue
            except redis.exceptions.RedisError as exc:
                log.warning("reading the recorder's batches failed (%s); again in %.1f s", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            if entries:
                self.record(entries)

    def _ensure_group(self) -> None:
        if self._group_made:
            return
        try:
            # From the stream's start: batches sent while no recorder ran are read.
            self.redis.xgroup_create(self.key, submit.RECORD_GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_made = True

    def _retries(self) -> list:
        """Entries read and not acknowledged for RETRY_IDLE_MS (their recording failed, or their
        recorder died), taken over; those delivered MAX_DELIVERIES times are dropped."""
        now = time.monotonic()
        if now - self._swept < RETRY_IDLE_MS / 2000:
            return []
        self._swept = now
        waiting = self.redis.xpending_range(self.key, submit.RECORD_GROUP, min="-", max="+", count=READ_COUNT,
                                            idle=RETRY_IDLE_MS)
        if not waiting:
            return []
        spent = [w["message_id"] for w in waiting if w["times_delivered"] >= MAX_DELIVERIES]
        if spent:
            for entry in self.redis.xrange(self.key, min=spent[0], max=spent[-1]):
                if entry[0] in spent:
                    log.error("gave up recording batch %s of run %s after %d tries; the watchdog completes "
                              "its run from the log", entry[0].decode(), entry[1].get(b"run", b"?").decode(),
                              MAX_DELIVERIES)
            self._done(spent)
        again = [w["message_id"] for w in waiting if w["times_delivered"] < MAX_DELIVERIES]
        if not again:
            return []
        return [entry for entry in self.redis.xclaim(self.key, submit.RECORD_GROUP, self.name,
                                                     min_idle_time=RETRY_IDLE_MS, message_ids=again)
                if entry and entry[1]]

    def record(self, entries: list) -> None:
        """Record one read's entries: a run's batches together, the runs in one transaction, each
        in a savepoint. What was committed is acknowledged; what failed waits for its retry."""
        runs: dict[str, tuple[list[dict], list]] = {}
        malformed = []
        for entry_id, fields in entries:
            try:
                run_id = str(uuid.UUID(fields[b"run"].decode()))
                events = json.loads(fields[b"events"])
                if not isinstance(events, list):
                    raise TypeError("not a list")
            except (KeyError, TypeError, ValueError, UnicodeDecodeError):
                # Not a run's id, or no list of events: no retry would record it.
                log.warning("dropping a malformed entry %s of the recorder's batches", entry_id)
                malformed.append(entry_id)
                continue
            batch, ids = runs.setdefault(run_id, ([], []))
            batch.extend(events)
            ids.append(entry_id)
        recorded: list[tuple[list, list[dict]]] = []
        close_old_connections()
        try:
            with transaction.atomic():
                for run_id in sorted(runs):
                    events, ids = runs[run_id]
                    with logs.run_context(run_id):
                        try:
                            with transaction.atomic():
                                do_record_events(run_id, events)
                        except Exception:  # this run's batch waits for its retry; the others commit
                            log.exception("recording %d events of run %s failed; tried again in %.0f s",
                                          len(events), run_id, RETRY_IDLE_MS / 1000)
                            continue
                        log.info("recorded %d events from the batch stream", len(events))
                    recorded.append((ids, events))
        except Exception:  # the commit itself (the database away): all of it is read again
            log.exception("committing %d runs' events failed; tried again in %.0f s", len(runs),
                          RETRY_IDLE_MS / 1000)
            connection.close()
            recorded = []
        done = malformed + [entry_id for ids, _ in recorded for entry_id in ids]
        if done:
            try:
                self._done(done)
            except redis.exceptions.RedisError as exc:  # recorded all the same: a retry is harmless
                log.warning("could not acknowledge %d recorded batches (%s)", len(done), exc)
        for _, events in recorded:
            observe_recorded(events)

    def _done(self, ids: list) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.xack(self.key, submit.RECORD_GROUP, *ids)
        pipe.xdel(self.key, *ids)
        pipe.execute()
