"""A run followed to its end, and what a tool answers of it.

Waiting costs no thread: the run's events arrive in its Redis stream (executor/events.py), which
the process's one live reader (``playground.streams.Hub``) reads for every websocket and every
tool call at once; the wait ends with the ``finished`` event, or after the run's own wall clock
and ``WAIT_MARGIN_S`` (queued behind others, say), when the answer says the run goes on and where
to follow it. The events are then read whole from the stream, and from the database where the
stream lacks them (expired, or a Redis that restarted), as ``GET /api/runs/<id>`` has them.

An answer is plain JSON: what a person sees on the page, bounded for an assistant's context.
Output is cut at ``OUTPUT_MAX_CHARS`` a stream, a compiled text at ``TEXT_MAX_CHARS``, and only
the first ``TEXTS_MAX`` functions carry their texts; the answer says where it cut (the whole is
at the run's API URL). Figures come as images beside the JSON."""

from __future__ import annotations

import asyncio
import json
import time

import redis.exceptions

from executor import events as ev
from playground.actions.runs import profile_state
from playground.streams import get_hub

from .asgi import Caller, in_thread

OUTPUT_MAX_CHARS = 20_000
TEXT_MAX_CHARS = 20_000
TRACEBACK_MAX_CHARS = 5_000
FIELD_MAX_CHARS = 4_000
FUNCTIONS_MAX = 50
# The functions whose texts an answer carries: the first compiled, which are the snippet's own
# more often than not; the rest come with their names, times and costs.
TEXTS_MAX = 10
TIMINGS_MAX = 50
DISPLAYS_MAX = 20
FIGURES_MAX = 3
ARRAYS_MAX = 100
# Beyond the run's wall clock: the queue, the sandbox's start, the recorder. With the default wall
# clock (30 s) a whole answer stays under a proxy's usual minute.
WAIT_MARGIN_S = 20
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

# A compiled event's fields an answer keeps; its texts (jaxpr, StableHLO, HLO) are added apart.
FUNCTION_FIELDS = ("name", "signature", "via", "line", "call_line", "in_types", "out_types", "num_devices",
                   "trace_ms", "lower_ms", "compile_ms", "cached", "flops", "transcendentals", "bytes_accessed",
                   "optimal_seconds", "memory", "compiles", "recompile", "warning", "capture_error", "truncated")
HLO_TEXTS = ("stablehlo", "hlo")
# What no answer carries: the page's line maps, a figure's bytes (sent as an image), raw samples,
# and the sentences a page says English in another language with (an assistant reads the English).
DROPPED = frozenset({"seq", "ts", "type", "data", "runs_ms", "jaxpr_lines", "stablehlo_lines", "hlo_lines",
                     "notes_parts", "cut_parts", "error_parts", "warning_parts", "explanation_template",
                     "explanation_args", "message_template", "message_args"})


# Following ---------------------------------------------------------------------------------------

def _finished(body: str) -> bool:
    return json.loads(body).get("type") == ev.FINISHED


async def follow(run_id: str, timeout_s: float) -> list[dict]:
    """The run's events once it has finished, or as far as they go after ``timeout_s``."""
    hub = get_hub()
    waiter = hub.wait(ev.log_key(run_id), 0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        while (left := deadline - loop.time()) > 0:
            try:
                entries = await asyncio.wait_for(waiter.queue.get(), left)
            except TimeoutError:
                break
            if any(_finished(body) for _seq, body in entries):
                break
    finally:
        hub.leave(waiter)
    return await events_of(run_id)


async def events_of(run_id: str) -> list[dict]:
    """Every event the run has so far, in order: its stream's, the database's where the stream
    has a gap."""
    try:
        logged = ev.decode_entries(await get_hub().redis.xrange(ev.log_key(run_id)))
    except REDIS_DOWN:
        logged = []
    if logged and [e["seq"] for e in logged] == list(range(1, len(logged) + 1)):
        return logged
    merged = {e["seq"]: e for e in await in_thread(_stored_events)(run_id)}
    merged.update((e["seq"], e) for e in logged)
    return [merged[seq] for seq in sorted(merged)]


def _stored_events(run_id: str) -> list[dict]:
    from playground.models import RunEvent

    return [e.data for e in RunEvent.objects.filter(run_id=run_id).order_by("seq")[:ev.LOG_MAX_EVENTS]]


# Answers -----------------------------------------------------------------------------------------

def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def _kept(event: dict, fields=None) -> dict:
    """An event's fields an answer keeps: no empty ones, long texts cut."""
    out = {}
    for key, value in event.items():
        if key in DROPPED or value is None or value == [] or value == {} or (fields and key not in fields):
            continue
        out[key] = _cut(value, FIELD_MAX_CHARS)[0] if isinstance(value, str) else value
    return out


def _output(events: list[dict], kind: str) -> dict:
    text = "".join(e.get("text") or "" for e in events if e["type"] == kind)
    shown, cut = _cut(text, OUTPUT_MAX_CHARS)
    return {kind: shown, **({f"{kind}_cut_at": OUTPUT_MAX_CHARS, f"{kind}_chars": len(text)} if cut else {})}


def error_of(events: list[dict]) -> dict | None:
    """The snippet's exception, explained where the runner knows it: its type, message, line
    (of the snippet), the explanation and a trimmed traceback."""
    error = next((e for e in reversed(events) if e["type"] == ev.ERROR), None)
    if error is None:
        return None
    out = {key: error.get(key) for key in ("exc_type", "message", "line", "explanation")}
    if error.get("traceback"):
        out["traceback"] = _cut(error["traceback"], TRACEBACK_MAX_CHARS)[0]
    return out


def function_of(event: dict, *, texts: bool, include_hlo: bool) -> dict:
    """One compilation: its call, times, costs and, with ``texts``, its jaxpr (and HLO)."""
    out = _kept(event, FUNCTION_FIELDS)
    if isinstance(out.get("recompile"), dict):  # an assistant reads the English; the parts are a page's
        out["recompile"] = {key: value for key, value in out["recompile"].items() if key != "reason_parts"}
    for name in ("jaxpr", *(HLO_TEXTS if include_hlo else ())) if texts else ():
        if event.get(name):
            out[name], cut = _cut(event[name], TEXT_MAX_CHARS)
            if cut:
                out[f"{name}_cut_at"] = TEXT_MAX_CHARS
    return out


def where_it_ran(started: dict | None) -> dict | None:
    if started is None:
        return None
    return _kept(started, ("worker", "device", "device_kind", "platform", "device_count", "runtime", "jax_version",
                           "jaxlib_version", "sandboxed"))


# How long an answer waits for a profile's trace, built after its run's end, to say what it holds.
PROFILE_WAIT_S = 20.0


def built_profile(event: dict, run_id: str) -> dict:
    """A profile event whose trace is built after its run's end (``building``), with what the
    trace holds once it is built (its summary per device), waited for up to PROFILE_WAIT_S; as
    it is after that, or when its build failed (the error)."""
    deadline = time.monotonic() + PROFILE_WAIT_S
    while True:
        state = profile_state(run_id) or {}
        if state.get("ready"):
            return {**{k: v for k, v in event.items() if k != "building"}, **state.get("info", {})}
        if state.get("error"):
            return {k: v for k, v in {**event, "error": state["error"], "url": None}.items() if k != "building"}
        if time.monotonic() > deadline:
            return event
        time.sleep(0.1)


def profile_of(event: dict | None, caller: Caller) -> dict | None:
    if event is None:
        return None
    out = _kept(event)
    if event.get("url"):
        out["url"] = caller.url(event["url"])
    return out


def figures_of(events: list[dict]) -> list[dict]:
    """The run's PNG figures, the first FIGURES_MAX (base64, as the events carry them)."""
    return [{"data": e["data"], "mime": "image/png"} for e in events
            if e["type"] == ev.DISPLAY and e.get("mime") == "image/png" and e.get("data")][:FIGURES_MAX]


def links_of(run_id: str, caller: Caller) -> dict:
    """Where the run is: its API URL (events, status) and its websocket. A run alone has no
    page: sharing it (the share tool, with ``run``) makes the permanent one."""
    return {"api": caller.url(f"/api/runs/{run_id}"), "websocket": caller.url(f"/ws/runs/{run_id}/").replace(
        "http", "ws", 1), "page": None}


def run_answer(run: dict, events: list[dict], caller: Caller, *, texts: bool = True,
               include_hlo: bool = False) -> dict:
    """A run as a tool answers it: ``run`` is its summary (``run_summary``), ``events`` as far
    as they go (``follow``)."""
    finished = next((e for e in reversed(events) if e["type"] == ev.FINISHED), None)
    started = next((e for e in events if e["type"] == ev.STARTED), None)
    compiled = [e for e in events if e["type"] == ev.COMPILED]
    timings = [e for e in events if e["type"] == ev.TIMING]
    displays = [e for e in events if e["type"] == ev.DISPLAY]
    shapes = next((e for e in reversed(events) if e["type"] == ev.SHAPES), None)
    status = finished["status"] if finished else (ev.STATUS_RUNNING if started else ev.STATUS_QUEUED)
    answer = {
        "run": run["id"],
        "status": status,
        "finished": finished is not None,
        "message": (finished or {}).get("message") or "",
        "device": run["device"],
        "runtime": run["runtime"],
        **({"note": run["note"]} if run.get("note") else {}),
        "ran_on": where_it_ran(started),
        **_output(events, ev.STDOUT),
        **_output(events, ev.STDERR),
        "error": error_of(events),
        "functions": [function_of(e, texts=texts and i < TEXTS_MAX, include_hlo=include_hlo)
                      for i, e in enumerate(compiled[:FUNCTIONS_MAX])],
        "timings": [_kept(e) for e in timings[:TIMINGS_MAX]],
        "displays": [_kept(e) for e in displays[:DISPLAYS_MAX]],
        "arrays": dict(list(((shapes or {}).get("names") or {}).items())[:ARRAYS_MAX]),
        "profile": profile_of(next((e for e in events if e["type"] == ev.PROFILE), None), caller),
        "usage": _kept(finished or {}, ("wall_ms", "cpu_ms", "peak_memory_kb", "output_bytes", "truncated")),
        "links": links_of(run["id"], caller),
    }
    if len(compiled) > FUNCTIONS_MAX:
        answer["functions_cut_at"] = FUNCTIONS_MAX
    if texts and len(compiled) > TEXTS_MAX:
        answer["texts_of_the_first"] = TEXTS_MAX
    if finished is None:
        answer["message"] = (f"the run is still {status}; its answer so far is above, and GET {answer['links']['api']} "
                             f"has the rest once it ends")
    return answer


def error_answer(run: dict, events: list[dict], caller: Caller) -> dict:
    """What went wrong in a run, and only that: its exception explained, or how it ended, or
    that it ran without error."""
    answer = run_answer(run, events, caller, texts=False)
    error = answer["error"]
    out = {"run": answer["run"], "status": answer["status"], "finished": answer["finished"],
           "error": error, "links": answer["links"]}
    if error is not None:
        out["summary"] = (f"{error['exc_type']} at line {error['line']}: {error['message']}" if error.get("line")
                          else f"{error['exc_type']}: {error['message']}")
    elif answer["status"] == ev.SUCCEEDED:
        out["summary"] = "the code ran without error"
    else:
        out["summary"] = answer["message"] or f"the run ended {answer['status']}"
    if answer["stderr"]:
        out["stderr"] = answer["stderr"]
    return out
