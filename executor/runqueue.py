"""A node's runs, taken from its queues' Redis lists by a thread a slot rather than by Celery's
consumer: each thread that is free blocks on one ``BRPOP`` over the node's lists, highest
priority first, and runs what it took (``Executor.execute``) before it looks again.

    web ─ LPUSH exec.cpu[\\x06\\x16<step>] (executor.submit.send_run) ─▶ RunReader: a thread a slot
                                                                       BRPOP ─▶ execute(...)

The lists and their messages are kombu's (``submit.task_message``), so what counted a queue's
depth (admission, ``/metrics``, an autoscaler) reads them as before, and a run a Celery client
published is taken too. What Celery's worker did for a run cost the node's process a few
milliseconds of CPU (its event loop's poll, the message's ack emulation in three round trips, its
task's trace and signals); a ``BRPOP`` is one round trip.

As before: a thread takes a run only when it is free, so runs wait in Redis, in priority order,
for whichever node frees first; a run is taken once (popped) and claimed before it starts, so it
is never run twice, and one whose node dies between the pop and the claim stays queued until the
watchdog gives it up (``RUN_QUEUE_TIMEOUT_S``). A node told to stop (``drain``) takes no more;
one taken in that moment goes back to the front of the list it came from, for another node.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from . import registry, submit

log = logging.getLogger("executor")

# How long one BRPOP blocks: how soon a thread sees that its node drains.
BLOCK_S = 1


class RunReader:
    """``slots`` threads, each taking and running one run at a time from ``queues``' lists."""

    def __init__(self, executor, redis_client, queues: list[str], slots: int):
        self.executor = executor
        self.redis = redis_client
        # Priority first, then the queues in the order given (as kombu's consumer asks).
        self.keys = [registry.priority_lists(q)[i] for i in range(len(registry.PRIORITY_STEPS)) for q in queues]
        self.slots = slots
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> RunReader:
        for n in range(self.slots):
            thread = threading.Thread(target=self._loop, name=f"runs-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, wait_s: float) -> None:
        """Take no more, and wait up to ``wait_s`` for the runs in progress to end: the node's
        runners go only after."""
        self._stop.set()
        deadline = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _done(self) -> bool:
        return self._stop.is_set() or self.executor.draining

    def _loop(self) -> None:
        delay = 0.1
        while not self._done():
            try:
                taken = self.redis.brpop(self.keys, timeout=BLOCK_S)
                delay = 0.1
            except redis.exceptions.RedisError as exc:  # a restart: read again once it is back
                log.warning("reading this node's queues failed (%s); again in %.1f s", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            if taken is not None:
                self._take(*taken)

    def _take(self, key: bytes, raw: bytes) -> None:
        message = submit.read_task_message(raw)
        if message is None:
            log.warning("dropping a message on %r that is no run's", key)
            return
        if self.executor.draining and message.get("session") is None:
            # Taken in the moment the node was told to stop: back to the front of its list, for
            # the next node. (A session's cell ends here, with its session: it lives on this node.)
            self._give_back(key, raw, message["run_id"])
            return
        try:
            self.executor.execute(message["run_id"], str(message.get("code", "")), message.get("options") or {},
                                  message.get("limits") or {}, message.get("grade"), message.get("session"),
                                  stdin=message.get("stdin") or "")
        except Exception:  # the watchdog ends a run whose executor failed around it
            log.exception("run %s failed outside its run", message["run_id"])

    def _give_back(self, key: bytes, raw: bytes, run_id: str) -> None:
        for attempt in range(5):
            try:
                self.redis.rpush(key, raw)
                log.info("run %s taken while draining; queued again for another node", run_id)
                return
            except redis.exceptions.RedisError as exc:
                log.warning("could not queue run %s again (%s)", run_id, exc)
                time.sleep(0.2 * (attempt + 1))
