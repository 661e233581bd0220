"""How a run reaches an executor and its events the recorder: the tasks' names and the run's
message, one definition for the web side, the executor and a client with nothing but the broker.

    web (playground.actions.runs)  ─┐
                                    ├─ send_run ─▶ queue exec.<kind>[.<specific>] ─▶ executor/runqueue.py
    python -m executor.submit  ─────┘                                                    │
                      ▲                                                                  │
                      └──── XREAD the run's event log (seq 1 = queued, … , finished) ◀───┘

``python -m executor.submit snippet.py [more.py …] --device gpu:h200`` submits snippets to the
executors online and prints each run's events as JSON lines (``--summary`` prints one line a run
instead), with no web side, database or Django: how a new node is tried from the node itself
(bench/gpu_check.sh), and what the web side's enqueue does minus the bookkeeping.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sys
import time
import uuid

from . import events as ev
from . import registry, sessionstate
from .envvars import env_str

# The executor's task (queues exec.<kind>[.<specific>]) and the recorder's that the executor sends
# (queue record). The web side defines the recorder's tasks under these names and never the
# executor's; the executor imports nothing of the web side's.
RUN_TASK = "executor.run"
RECORD_TASK = "recorder.record_events"
GRADE_TASK = "recorder.record_grade"
# A profiled run's trace, built after its end (executor/profiles.py), to store from Redis.
PROFILE_TASK = "recorder.store_profile"
# A run's events reach the recorder as entries of a Redis stream beside its queue
# (``record_stream``), read by its group of recorders (playground/batches.py), rather than as
# RECORD_TASK messages: one XADD where a task's publish, delivery, trace and ack cost each batch
# some milliseconds of CPU in two processes, and the recorder writes what it read in one
# transaction. RECORD_TASK stays for batches still queued when a recorder is upgraded.
RECORD_GROUP = "recorders"


def record_stream(queue: str) -> str:
    """The stream of event batches beside the recorder's queue (``record`` → ``record:batches``)."""
    return f"{queue}:batches"


def send_batch(redis, queue: str, run_id: str, events: list[dict]) -> None:
    """One batch of a run's events to the recorders (entry fields ``run`` and ``events``, JSON)."""
    redis.xadd(record_stream(queue), {"run": run_id, "events": json.dumps(events, separators=(",", ":"))})


def run_message(run_id: str, code: str, options: dict | None, limits: dict,
                grade: dict | None = None, session: dict | None = None, stdin: str = "") -> dict:
    """The task's keyword arguments: everything the executor needs, and plain JSON only.
    ``session``: a notebook session's cell ({"id", "idle_s"}; executor/sessions.py). ``stdin``:
    the snippet's standard input, only when it has one (a run without says nothing of it)."""
    return {"run_id": run_id, "code": code, "options": options or {}, "limits": limits,
            **({"grade": grade} if grade else {}), **({"session": session} if session else {}),
            **({"stdin": stdin} if stdin else {})}


def send_run(redis, device: str, message: dict, priority: int = 0) -> None:
    """Queue a run on its device's queue (``gpu:h200`` → ``exec.gpu.h200``) at a priority step
    (``registry.PRIORITY_STEPS``, 0 first). Its log must hold its ``queued`` event (seq 1)
    already: the executor appends after it."""
    send_to_queue(redis, registry.queue_name(device), message, priority)


def send_to_queue(redis, queue: str, message: dict, priority: int = 0) -> None:
    """``send_run`` to a queue by its name: one ``LPUSH`` of the task's message onto the queue's
    list for the priority, as kombu's Redis transport would have put it there (``task_message``).
    A Celery publish cost the web side a few milliseconds of CPU a run, and it looked the queue's
    binding up first: a run published before a worker had declared its queue (a Redis restart)
    went nowhere. The list needs no binding; the executors' readers (executor/runqueue.py) and a
    Celery worker (the node's sessions queue) read it alike.

    Where the message waits is noted beside it (``queued_key``), so that a run cancelled while
    queued takes its message out (``unqueue``): a cancelled run's message no longer counts
    towards a full queue until a node pops it. ``redis``: a client, or a pipeline the caller
    sends."""
    pipe = redis.pipeline(transaction=False) if getattr(redis, "command_stack", None) is None else redis
    key, raw = registry.queue_list(queue, priority), task_message(queue, message, priority)
    pipe.lpush(key, raw)
    pipe.hset(queued_key(message["run_id"]), mapping={"list": key, "message": raw})
    pipe.expire(queued_key(message["run_id"]), QUEUED_TTL_S)
    if pipe is not redis:
        pipe.execute()


# How long where a queued run's message waits is kept: as long as its log, and a node taking the
# run deletes it as it claims the run.
QUEUED_TTL_S = 86400


def queued_key(run_id: str) -> str:
    """Which list a queued run's message is in, and the message (``send_to_queue``)."""
    return f"queued:{run_id}"


_UNQUEUE_LUA = """
local list = redis.call('HGET', KEYS[1], 'list')
local message = redis.call('HGET', KEYS[1], 'message')
redis.call('DEL', KEYS[1])
if list and message then return redis.call('LREM', list, 1, message) end
return 0
"""


def unqueue(redis, run_id: str) -> bool:
    """Take a run's message off its queue (a run cancelled, or given up, before a node took it).
    Whether it was still there."""
    return bool(redis.eval(_UNQUEUE_LUA, 1, queued_key(run_id)))


def task_message(queue: str, message: dict, priority: int = 0) -> bytes:
    """``executor.run`` with ``message`` as its keyword arguments, in Celery's task protocol 2 as
    kombu's Redis transport stores a message (JSON, the body base64): what ``app.send_task`` would
    have pushed, with headers that name only the run (``task_reprs``)."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[], message, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}],
                      separators=(",", ":"))
    reprs = task_reprs(message["run_id"])
    return json.dumps({
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {"lang": "py", "task": RUN_TASK, "id": task_id, "shadow": None, "eta": None, "expires": None,
                    "group": None, "group_index": None, "retries": 0, "timelimit": [None, None],
                    "root_id": task_id, "parent_id": None, **reprs, "origin": _ORIGIN, "ignore_result": True,
                    "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {}},
        "properties": {"correlation_id": task_id, "reply_to": None, **reprs, "delivery_mode": 2,
                       "delivery_info": {"exchange": "", "routing_key": queue}, "priority": priority,
                       "body_encoding": "base64", "delivery_tag": task_id},
    }, separators=(",", ":")).encode()


_ORIGIN = f"{os.getpid()}@{socket.gethostname()}"


def task_reprs(run_id: str) -> dict:
    """How a run's task shows itself in Celery's events and logs: by its run, not a repr of its
    arguments (a snippet's code, a batch of events), which Celery would otherwise make for every
    message."""
    return {"argsrepr": "", "kwargsrepr": f"run {run_id}"}


def read_task_message(raw: bytes) -> dict | None:
    """The keyword arguments of an ``executor.run`` message taken off a queue's list (as
    ``task_message`` or Celery's own publish made it), or None for anything else."""
    try:
        envelope = json.loads(raw)
        if envelope.get("headers", {}).get("task") != RUN_TASK:
            return None
        body = envelope["body"]
        if envelope.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        kwargs = json.loads(body)[1]
        return kwargs if isinstance(kwargs, dict) and isinstance(kwargs.get("run_id"), str) else None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None


def follow(redis, run_id: str, timeout_s: float) -> list[dict]:
    """The run's events from the first to ``finished``, as a websocket reads them (one blocking
    ``XREAD`` after the last seq seen)."""
    seen, out = 0, []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = redis.xread({ev.log_key(run_id): ev.stream_id(seen)}, block=1000, count=500)
        for _stream, entries in answer or []:
            for event in ev.decode_entries(entries):
                seen = event["seq"]
                out.append(event)
                if event["type"] == ev.FINISHED:
                    return out
    raise TimeoutError(f"run {run_id} did not finish within {timeout_s:.0f} s ({len(out)} events so far)")


def submit(redis, device: str, code: str, limits: dict, timeout_s: float, *, options: dict | None = None,
           session: dict | None = None, queue: str | None = None, extra: dict | None = None,
           run_id: str | None = None) -> dict:
    """One run, start to finish: ``{"id", "events", "queued_to_started_ms", "queued_to_finished_ms",
    "first_output_ms"}``. ``session``: a notebook session's cell ({"id", "idle_s"}: the caller has
    taken the session for it, executor.sessionstate), sent to ``queue`` (the node holding the
    session) when given. ``extra``: further fields of the run's message."""
    run_id = run_id or str(uuid.uuid4())
    position = registry.queue_depth(redis, device) + 1
    queued = ev.EventLog(redis).append(run_id, ev.make_event(ev.QUEUED, position=position))
    assert queued is not None and queued["seq"] == 1, queued
    if session is not None:
        taken = sessionstate.take(redis, session["id"], run_id)
        if taken != "ok":
            raise RuntimeError(f"session {session['id']} cannot take a cell: {taken}")
    sent = time.time()
    message = {**run_message(run_id, code, options, limits, session=session), **(extra or {})}
    if queue:
        send_to_queue(redis, queue, message)
    else:
        send_run(redis, device, message)
    events = follow(redis, run_id, timeout_s)
    started = next((e for e in events if e["type"] == ev.STARTED), None)
    output = next((e for e in events if e["type"] in (ev.STDOUT, ev.STDERR)), None)
    return {
        "id": run_id,
        "events": events,
        "sent": sent,
        "queued_to_started_ms": round((started["ts"] - sent) * 1000, 1) if started else None,
        "queued_to_finished_ms": round((events[-1]["ts"] - sent) * 1000, 1),
        "first_output_ms": round((output["ts"] - sent) * 1000, 1) if output else None,
    }


def summary(path: str, result: dict) -> dict:
    """One line a run: where it ran, how it ended, its timings and what it printed (shortened)."""
    events = result["events"]
    started = next((e for e in events if e["type"] == ev.STARTED), {})
    finished = events[-1]
    return {
        "snippet": path,
        "status": finished.get("status"),
        "message": finished.get("message") or None,
        "worker": started.get("worker"), "device": started.get("device"), "device_kind": started.get("device_kind"),
        "device_count": started.get("device_count"), "platform": started.get("platform"),
        "jax": started.get("jax_version"), "jaxlib": started.get("jaxlib_version"),
        "queued_to_started_ms": result["queued_to_started_ms"],
        "queued_to_finished_ms": result["queued_to_finished_ms"],
        "wall_ms": finished.get("wall_ms"),
        "timings": [{k: e.get(k) for k in ("label", "text", "repeats", "loops", "mean_ms", "std_ms", "min_ms",
                                           "compile_ms", "gflops", "gbs", "dispatch_only")}
                    for e in events if e["type"] == ev.TIMING],
        "compiled": [e.get("name") for e in events if e["type"] == ev.COMPILED],
        "stdout": "".join(e.get("text", "") for e in events if e["type"] == ev.STDOUT)[-2000:],
        "error": next(({k: e.get(k) for k in ("exc_type", "message", "line")} for e in events if e["type"] == ev.ERROR),
                      None),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m executor.submit", description=__doc__.split("\n\n")[0])
    parser.add_argument("snippets", nargs="+", help="Python files to run, one run each")
    parser.add_argument("--device", default="cpu", help="a kind (cpu, gpu, tpu) or a specific kind (gpu:h200)")
    parser.add_argument("--redis", default=None, help="the broker's URL (default: the executor's REDIS_URL)")
    parser.add_argument("--wall", type=float, default=60, help="the run's wall-clock limit, seconds")
    parser.add_argument("--memory-mb", type=int, default=0, help="the run's memory limit (default: the node's)")
    parser.add_argument("--repeat", type=int, default=1, help="run each snippet this many times, one after another")
    parser.add_argument("--summary", action="store_true", help="one JSON line a run instead of its events")
    args = parser.parse_args(argv)
    if not registry.DEVICE_PATTERN.fullmatch(args.device):
        parser.error(f"unknown device {args.device!r}: a kind (cpu, gpu, tpu) or a specific kind such as gpu:h200")

    import redis as redis_py

    if args.redis is None:
        # As the worker reads it (executor/settings.py), without importing the worker's settings:
        # this module is also the web side's, which never imports the sandbox they configure.
        args.redis = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis_py.Redis.from_url(args.redis)
    if not registry.online_workers(client, args.device):
        print(f"no {args.device} executor is online on {args.redis}", file=sys.stderr)
        return 2
    limits = {"wall_s": args.wall, **({"memory_bytes": args.memory_mb * 1024**2} if args.memory_mb else {})}
    failed = 0
    for path in args.snippets:
        with open(path, encoding="utf-8") as f:
            code = f.read()
        for _ in range(args.repeat):
            result = submit(client, args.device, code, limits, timeout_s=args.wall + 120)
            failed += result["events"][-1].get("status") != ev.SUCCEEDED
            if args.summary:
                print(json.dumps(summary(path, result)), flush=True)
            else:
                for event in result["events"]:
                    print(json.dumps(event), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
