"""The pulse of the runs a node holds while they wait on something that does not tick.

A run's supervisor refreshes its alive key as it ticks (execution.py's ``_ticker``); the watchdog
takes a claimed run whose key has lapsed (ALIVE_TTL_S, then as long again) as lost. Before it has a
runner, a run ticks nothing: a runner started cold on a loaded machine, a notebook session's first
runner, a place in a chip's line that lasts minutes. Those waits are held ``meanwhile``: one thread
of the node refreshes, every ALIVE_EVERY_S, the key of each run that has waited that long, so a
wait that ends sooner costs a dict entry and nothing in Redis.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import redis.exceptions

from . import events as ev

log = logging.getLogger("executor.pulse")


class Pulse:
    def __init__(self, redis_client, name: str, every_s: float = ev.ALIVE_EVERY_S):
        self.redis, self.name, self.every_s = redis_client, name, every_s
        self._waiting: dict[str, float] = {}  # run → when its key was last set (monotonic)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def meanwhile(self, run_id: str):
        """While the block lasts, ``run_id``'s alive key (set at its claim) is kept. Once it has
        ended, no beat of this pulse sets the key again: a beat holds the lock."""
        with self._lock:
            self._waiting[run_id] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="pulse", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._waiting.pop(run_id, None)

    def waiting(self) -> list[str]:
        with self._lock:
            return list(self._waiting)

    def stop(self) -> None:
        self._stop.set()

    def beat(self) -> int:
        """Sets the key of each run that has waited ALIVE_EVERY_S since its last; how many."""
        with self._lock:
            now = time.monotonic()
            due = [run_id for run_id, at in self._waiting.items() if now - at >= self.every_s]
            if not due:
                return 0
            try:
                pipe = self.redis.pipeline(transaction=False)
                for run_id in due:
                    pipe.set(ev.alive_key(run_id), self.name, ex=ev.ALIVE_TTL_S)
                pipe.execute()
            except redis.exceptions.RedisError as exc:  # a restart: again next beat
                log.warning("could not refresh the alive keys of %d waiting runs (%s)", len(due), exc)
                return 0
            for run_id in due:
                self._waiting[run_id] = now
            return len(due)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s / 4):
            self.beat()
