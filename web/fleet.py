"""The fleet as the broker sees it, read when /metrics is scraped (web/metrics.py), so that every
web process, on any host, answers it whole:

    playground_executor_queue_depth{queue, kind, device, runtime}   runs waiting in a queue, at
        every priority (exec.<kind>, exec.<kind>@<runtime>, and the specific kinds' queues of
        workers online, exec.gpu.h200): what an autoscaler reads
    playground_executor_workers_online{kind, device, runtime}       workers beating within
        EXECUTOR_ONLINE_WINDOW_S (0 for a kind and runtime with none)
    playground_executor_slots{kind, device, runtime, state}         their slots, busy or free
    playground_executor_warm_runners{kind, device, runtime}         runners forked and waiting
    playground_recorder_queue_depth                                 batches (its stream's) and tasks
                                                                    waiting for the recorder
    playground_recorder_oldest_batch_age_seconds                    how old the oldest event of the
        batches first in line is (0 with none waiting): a recorder that stopped shows here
    playground_executor_start_faults{kind, code}                    workers whose runners fail to start
                                                                    lately, by cause (device_busy,
                                                                    no_metadata, no_device_node...)
    playground_broker_up                                            0 when Redis did not answer
                                                                    (the rest is then left out)

All from the workers' heartbeats and the queues' lists (executor/registry.py): a few round trips
to Redis a scrape, none per request.
"""

from __future__ import annotations

import base64
import json
import time

import redis
from django.conf import settings
from kombu.transport.redis import Channel
from prometheus_client.core import GaugeMetricFamily

from executor import registry, runtimes, submit
from web.health import quick_redis

# The batches at the head of the record queue whose events' times are read (each is a few KiB).
OLDEST_BATCHES = 4


class FleetCollector:
    def collect(self):
        up = GaugeMetricFamily("playground_broker_up", "1 when this scrape read the fleet from Redis, else 0")
        try:
            families = _read(quick_redis())
        except redis.RedisError:
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        return [up, *families]


def _read(client: redis.Redis) -> list:
    window = settings.EXECUTOR_ONLINE_WINDOW_S
    # A host runtime (runtimes.toml: environment = "host") counts only where a worker serves it.
    served = runtimes.catalog().own_ids
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for kind in settings.RUN_DEVICE_KINDS:
        for worker in registry.online_workers(client, kind, window):
            device = str(worker.get("device") or kind)
            groups.setdefault((kind, device, str(worker.get("runtime") or runtimes.FIRST)), []).append(worker)
    kinds = {(kind, kind, runtime) for kind in settings.RUN_DEVICE_KINDS for runtime in served}
    for key in kinds:
        if not any(k == key[0] and r == key[2] for k, _, r in groups):
            groups[key] = []  # a kind and runtime no worker serves now: 0, not nothing
    return [*_workers(groups), _queues(client, sorted(kinds | set(groups))), *_recorder(client), _faults(client)]


def _faults(client: redis.Redis) -> GaugeMetricFamily:
    """Workers whose runners do not start, by kind and cause (executor.registry.report_fault)."""
    faults = GaugeMetricFamily("playground_executor_start_faults",
                               "Executor workers whose runners failed to start lately, by cause",
                               labels=["kind", "code"])
    for kind in settings.RUN_DEVICE_KINDS:
        counts: dict[str, int] = {}
        for fault in registry.faults(client, kind):
            code = str(fault.get("code") or "unknown")
            counts[code] = counts.get(code, 0) + 1
        for code, n in sorted(counts.items()):
            faults.add_metric([kind, code], n)
    return faults


def _workers(groups: dict[tuple[str, str, str], list[dict]]) -> list:
    labels = ["kind", "device", "runtime"]
    online = GaugeMetricFamily("playground_executor_workers_online",
                               "Executor workers whose heartbeat is within EXECUTOR_ONLINE_WINDOW_S", labels=labels)
    slots = GaugeMetricFamily("playground_executor_slots", "Run slots of the workers online, busy or free",
                              labels=[*labels, "state"])
    warm = GaugeMetricFamily("playground_executor_warm_runners", "Runners forked and waiting for a run",
                             labels=labels)
    for key, workers in sorted(groups.items()):
        total = sum(int(w.get("slots") or 0) for w in workers)
        busy = sum(int(w.get("busy") or 0) for w in workers)
        online.add_metric(list(key), len(workers))
        slots.add_metric([*key, "busy"], busy)
        slots.add_metric([*key, "free"], max(0, total - busy))
        warm.add_metric(list(key), sum(int(w.get("warm") or 0) for w in workers))
    return [online, slots, warm]


def _queues(client: redis.Redis, keys: list[tuple[str, str, str]]) -> GaugeMetricFamily:
    """Every kind's queue for every runtime, and each specific kind's that a worker online serves."""
    depth = GaugeMetricFamily("playground_executor_queue_depth", "Runs waiting in an executor queue, at every priority",
                              labels=["queue", "kind", "device", "runtime"])
    pipe = client.pipeline(transaction=False)
    steps = len(registry.PRIORITY_STEPS)
    for _, device, runtime in keys:
        for name in registry.queue_lists(registry.route(device, runtime)):
            pipe.llen(name)
    lengths = pipe.execute()
    for i, (kind, device, runtime) in enumerate(keys):
        depth.add_metric([registry.queue_name(registry.route(device, runtime)), kind, device, runtime],
                         sum(lengths[i * steps:(i + 1) * steps]))
    return depth


def _recorder(client: redis.Redis) -> list:
    queue = settings.RECORD_QUEUE
    # kombu's lists of one queue, a priority step each (as executor.registry.queue_lists names them).
    lists = [queue if step == 0 else f"{queue}{Channel.sep}{step}" for step in registry.PRIORITY_STEPS]
    pipe = client.pipeline(transaction=False)
    for name in lists:
        pipe.llen(name)
    # kombu pushes on the left and takes from the right: the right end is first in line.
    pipe.lrange(queue, -OLDEST_BATCHES, -1)
    # The executors' batches (playground/batches.py): what the stream holds waits, read or not
    # (an entry goes once recorded), and its first entries are the oldest.
    stream = submit.record_stream(queue)
    pipe.xlen(stream)
    pipe.xrange(stream, count=OLDEST_BATCHES)
    *lengths, first_in_line, streamed, first_streamed = pipe.execute()
    depth = GaugeMetricFamily("playground_recorder_queue_depth",
                              "Batches and tasks waiting for the recorder")
    depth.add_metric([], sum(lengths) + streamed)
    age = GaugeMetricFamily("playground_recorder_oldest_batch_age_seconds",
                            "Age of the oldest event among the batches first in the recorder's queue (0: none waits)")
    times = [ts for message in first_in_line for ts in _event_times(message)]
    times += [ts for _, fields in first_streamed for ts in _entry_times(fields)]
    if times:
        age.add_metric([], max(0.0, time.time() - min(times)))
    elif not sum(lengths) and not streamed:
        age.add_metric([], 0.0)
    return [depth, age]


def _entry_times(fields: dict) -> list[float]:
    """The events' times of a batch in the recorder's stream (executor/submit.py ``send_batch``)."""
    try:
        events = json.loads(fields[b"events"])
        return [float(e["ts"]) for e in events if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    except (ValueError, KeyError, TypeError):
        return []


def _event_times(message: bytes) -> list[float]:
    """The events' times of a recorder batch as kombu keeps it (a JSON envelope around Celery's
    message, whose body is ``[args, kwargs, embed]``); none for another task or what cannot be read."""
    try:
        envelope = json.loads(message)
        if envelope.get("headers", {}).get("task") != submit.RECORD_TASK:
            return []
        body = envelope["body"]
        if envelope.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        events = json.loads(body)[0][1]
        return [float(e["ts"]) for e in events if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return []
