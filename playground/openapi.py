"""The runs' part of the OpenAPI document (web/openapi.py): devices, runs, the formatter."""

from __future__ import annotations

from django.conf import settings

from executor import events as ev
from web.openapi import DEVICE_PATTERN, RUNTIME, error, reply

from .actions.runs import RUN_MAX_STDIN_BYTES

RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
SESSION_ID = {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}


def paths() -> dict:
    return {
        "/api/devices": {"get": {
            "summary": "Device kinds and their live availability",
            "operationId": "listDevices",
            "responses": {"200": reply("DeviceList", "Every known device kind")},
        }},
        "/api/runtimes": {"get": {
            "summary": "The runtimes (JAX versions side by side) and the kinds that serve each now",
            "operationId": "listRuntimes",
            "responses": {"200": reply("RuntimeList", "Every runtime of the catalog")},
        }},
        "/api/runs": {"post": {
            "summary": "Start a run",
            "operationId": "startRun",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/RunRequest"}}}},
            "responses": {
                "201": reply("RunSummary", "The run was queued"),
                "400": error("Bad input: malformed JSON, missing or non-string code, code or stdin too large, "
                             "unknown device, unknown runtime (the message names the known ones)"),
                "415": error("The body is not JSON"),
                "429": error("Too many runs from this client; see Retry-After"),
                "503": error("No executor of that kind (and runtime) is online"),
            },
        }},
        "/api/runs/{run_id}": {"get": {
            "summary": "A run's status and its events so far, a page at a time",
            "operationId": "getRun",
            "parameters": [
                RUN_ID,
                {"name": "after", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 0, "default": 0},
                 "description": "Only events with a larger seq (the previous page's events_next)"},
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1},
                 "description": "Events per page, at most RUN_EVENTS_PAGE (1000 by default)"},
            ],
            "responses": {"200": reply("RunDetail", "The run"), "400": error("A bad after or limit"),
                          "404": error("No such run")},
        }},
        "/api/runs/{run_id}/profile": {"get": {
            "summary": "A profiled run's trace: Chrome Trace Event Format JSON",
            "description": "For a run started with options.profile, once its \"profile\" event has come (that event "
                           "names this URL and says what the trace holds). One lane (process) per device, named "
                           "after it (TFRT_CPU_0, /device:GPU:0) with rows XLA Modules and XLA Ops, whose events are "
                           "named after their HLO instruction (args.hlo_op, args.hlo_module); the Host lane with the "
                           "snippet's Python, XLA's dispatches and compilations. Times in microseconds. Sent "
                           "gzip-encoded to a client that accepts it; ?download=1 gives the .json.gz file, which "
                           "Perfetto and chrome://tracing open.",
            "operationId": "getRunProfile",
            "parameters": [RUN_ID, {"name": "download", "in": "query", "required": False,
                                    "schema": {"type": "string"}, "description": "Any value: the gzipped file"}],
            "responses": {"200": {"description": "The trace", "content": {
                "application/json": {"schema": {"type": "object", "required": ["traceEvents"]}},
                "application/gzip": {"schema": {"type": "string", "format": "binary"}}}},
                "404": error("No such run, or it has no profile (not asked for, failed, or no longer kept)")},
        }},
        "/api/runs/{run_id}/cancel": {"post": {
            "summary": "Cancel a queued or running run",
            "operationId": "cancelRun",
            "parameters": [RUN_ID],
            "responses": {
                "202": reply("CancelResult", "Cancelled, or cancelling within a second"),
                "403": error("A run a link keeps, which only whoever started it may cancel, or a notebook "
                             "session's cell, which only the session's maker may interrupt"),
                "404": error("No such run"),
                "409": error("The run already finished"),
            },
        }},
        "/api/sessions": {"post": {
            "summary": "Start a notebook session: a sandboxed runner that keeps its cells' state",
            "description": "Its runner starts with its first cell on a node of the kind and keeps its cells' globals, "
                           "device arrays and compiled functions. It is stopped after idle_timeout_s without a cell "
                           "(SESSION_IDLE_TIMEOUT_S), when its owner ends it, when a cell kills its runner or its node "
                           "goes; its socket (ws) says so as it happens.",
            "operationId": "startSession",
            "requestBody": {"required": False, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {"device": {"type": "string", "pattern": DEVICE_PATTERN,
                                          "default": settings.RUN_DEFAULT_DEVICE}, "runtime": RUNTIME}}}}},
            "responses": {
                "201": reply("Session", "The session, idle until its first cell"),
                "400": error("Unknown device or runtime, an unknown field"),
                "429": error(f"The person holds SESSION_MAX_PER_CLIENT ({settings.SESSION_MAX_PER_CLIENT}) live "
                             "sessions (their ids under sessions), or started too many this hour"),
                "503": error("No executor of that kind is online, or none has room for another session"),
            },
        }},
        "/api/sessions/{session_id}": {
            "get": {
                "summary": "A session's state: idle, live (a cell runs) or stopped (and why), and what it holds",
                "operationId": "getSession",
                "parameters": [SESSION_ID],
                "responses": {"200": reply("Session", "The session"),
                              "404": error("No such session, or not yours")},
            },
            "delete": {
                "summary": "End a session (a cell it runs ends with it)",
                "operationId": "endSession",
                "parameters": [SESSION_ID],
                "responses": {"200": {"description": "Ended"}, "404": error("No such session, or not yours")},
            },
        },
        "/api/sessions/{session_id}/cells": {"post": {
            "summary": "Run a cell in the session",
            "description": "A run, answered as POST /api/runs answers one: its events stream on ws exactly as a "
                           "run's, and end with finished. One cell at a time. A cancel (POST "
                           "/api/runs/{id}/cancel) or the wall clock interrupts it with KeyboardInterrupt and the "
                           "session keeps its state; a cell that kills its runner ends the session (finished's "
                           "message says so).",
            "operationId": "runCell",
            "parameters": [SESSION_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "additionalProperties": False, "properties": {
                    "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                    "options": {"$ref": "#/components/schemas/RunRequest/properties/options"}}}}}},
            "responses": {
                "201": reply("RunSummary", "The cell was queued"),
                "400": error("Malformed, no code, code too large"),
                "404": error("No such session, or not yours"),
                "409": error("Another cell of the session is queued or running (its run id under running)"),
                "410": error("The session was stopped (stopped_reason says why); start another"),
                "429": error("Too many runs from this client; see Retry-After"),
            },
        }},
        "/api/format": {"post": {
            "summary": "Format code with ruff's formatter (%-magics and !-lines kept as they are)",
            "operationId": "formatCode",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"],
                "properties": {"code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES}}}}}},
            "responses": {"200": {"description": "The formatted code", "content": {"application/json": {
                "schema": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
                          "400": error("Malformed"), "413": error("Too long"),
                          "422": error("Not valid Python (the message names the line)"),
                          "429": error("Too many requests")},
        }},
        "/api/analyse": {"post": {
            "summary": "The editor's completion, a completion's details, signature help or docs on hover",
            "description": "Answered by the analysers on the executor nodes (jedi, in the environment runs use; "
                           "the code is parsed, never run). Positions count from 1, as Monaco's. A request "
                           "overtaken by a newer one of the same op and client (a higher seq) answers "
                           "{\"superseded\": true}; one the analyser could not finish answers {\"error\"}.",
            "operationId": "analyseCode",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["op", "code", "line", "column"],
                "properties": {"op": {"type": "string", "enum": ["complete", "resolve", "signatures", "hover"]},
                               "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                               "line": {"type": "integer", "minimum": 1},
                               "column": {"type": "integer", "minimum": 1},
                               "seq": {"type": "integer", "minimum": 0},
                               "editor": {"type": "string", "maxLength": 64,
                                          "description": "A name of the page's own: seq counts within it"},
                               "label": {"type": "string", "description": "resolve: the completion's label"}}}}}},
            "responses": {"200": {"description": "complete: {items: [{label, kind, insert, signature?, doc?}]}; "
                                                 "signatures: {signatures: [{label, params, index, doc}]}; "
                                                 "hover and resolve: {name, full_name, signature, doc, docs_url}",
                                  "content": {"application/json": {"schema": {"type": "object"}}}},
                          "400": error("Malformed"), "413": error("Too long"),
                          "429": error("Too many requests"), "503": error("No analyser answered in time")},
        }},
        "/api/lint": {"post": {
            "summary": "The code's problems: syntax errors, undefined names, unused imports and variables",
            "operationId": "lintCode",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"],
                "properties": {"code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES}}}}}},
            "responses": {"200": {"description": "{problems: [{line, column, end_line, end_column, code, message, "
                                                 "severity (error|warning), unnecessary}]}",
                                  "content": {"application/json": {"schema": {"type": "object",
                                                                              "required": ["problems"]}}}},
                          "400": error("Malformed"), "413": error("Too long"), "429": error("Too many requests")},
        }},
    }


# What a run may ask of its runner (playground.actions.runs.RUN_OPTIONS).
RUN_OPTIONS = {"type": "object", "additionalProperties": False, "properties": {
    "compile_cache": {"type": "boolean", "default": True,
                      "description": "false: XLA compiles everything afresh, rather than loading what "
                                     "the node compiled for an earlier run (to measure compile times)"},
    "profile": {"type": "boolean", "default": False,
                "description": "true: run under jax.profiler; a \"profile\" event then names the trace's URL "
                               "(GET /api/runs/{run_id}/profile) with a summary per device. The profiler's cost "
                               "is the run's: its CPU and wall clock"},
    "chips": {"type": "integer", "minimum": 1, "maximum": 64, "default": 1,
              "description": "On a node of exclusive chips (a TPU host): 1, or all the host's chips, held by one "
                             "runner for pmap or shard_map across them; the run waits in line for them (its "
                             "\"waiting\" events). Another number is refused by the node"}}}


# What a kind of exclusive chips (a TPU: executor/chips.py) says of them (absent on other kinds).
CHIPS = {
    "chips": {"type": "integer", "description": "Exclusive chips of its nodes, each held by one run or session"},
    "chips_ready": {"type": "integer", "description": "Chips whose runner has opened them and waits for a run"},
    "chip_waiting": {"type": "integer", "description": "Runs and sessions waiting on the nodes for a chip"},
    "chip_turnaround_s": {"type": ["number", "null"],
                          "description": "A chip's time between two holders lately (the run, its runner's exit, "
                                         "the next one's open): what a wait is reckoned from"},
    "chip_open_ms": {"type": ["number", "null"],
                     "description": "How long a chip's runner took to open it lately (the chip's open alone)"},
    "chip_start_ms": {"type": ["number", "null"],
                      "description": "How long a chip's next runner took to start before that (its process and "
                                     "imports), paid while the chip's last holder still ran"},
}


# A run's standard input (playground.actions.runs.check_stdin).
STDIN = {"type": "string", "maxLength": RUN_MAX_STDIN_BYTES, "default": "",
         "description": f"The snippet's standard input: at most {RUN_MAX_STDIN_BYTES} bytes of UTF-8 text (no NUL), "
                        "which sys.stdin reads exactly (sys.stdin.buffer as bytes), then its end: input() reads it "
                        "a line at a time and raises EOFError past its last line. Absent or \"\": none. A notebook "
                        "session's cells have none"}


def schemas() -> dict:
    kinds = list(settings.RUN_DEVICE_KINDS)
    nullable_num = {"type": ["number", "null"]}
    return {
        "RunRequest": {"type": "object", "required": ["code"], "properties": {
            "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES,
                     "description": f"At most {settings.RUN_MAX_CODE_BYTES} bytes of UTF-8"},
            "device": {"type": "string", "pattern": DEVICE_PATTERN, "default": settings.RUN_DEFAULT_DEVICE,
                       "description": "A kind (cpu, gpu, tpu), or a specific device kind of one (gpu:h200, "
                                      "as GET /api/devices lists them); 503 when none is online"},
            "runtime": RUNTIME,
            "stdin": STDIN,
            "snippet": {"type": "string", "description": "The slug of the snippet this code comes from: a "
                        "snippet shared unrun keeps its first run (of its code and stdin) as its saved output"},
            "options": RUN_OPTIONS,
        }},
        "Session": {"type": "object", "required": ["id", "url", "ws", "state"], "properties": {
            "id": {"type": "string", "format": "uuid"},
            "url": {"type": "string", "description": "Its API path; POST {url}/cells runs a cell"},
            "ws": {"type": "string", "description": "Websocket path of its state: {\"type\": \"state\", ...this "
                                                    "object} on connect and on every change"},
            "state": {"type": "string", "enum": ["idle", "live", "stopped"]},
            "started": {"type": "boolean", "description": "Its runner has started (with its first cell)"},
            "running": {"type": ["string", "null"], "description": "The run id of the cell in flight"},
            "stopped_reason": {"type": ["string", "null"]},
            "runtime": RUNTIME,
            "device": {"type": "string", "pattern": DEVICE_PATTERN},
            "idle_timeout_s": {"type": "integer"},
            "cells_run": {"type": "integer"},
            "names": {"type": "object", "additionalProperties": {"type": "string"},
                      "description": "What its namespace holds: each name and its type or shape"},
            "memory_bytes": {"type": ["integer", "null"], "description": "Its runner's resident memory"},
            "lease": {"type": ["object", "null"], "description": "On an exclusive chip (a TPU's): the chips its runner "
                      "holds (\"0\"), until when if no cell runs (the node's ACCELERATOR_SESSION_IDLE_S), and how "
                      "many runs and sessions wait for a chip", "properties": {
                          "chips": {"type": "string"}, "until": {"type": ["string", "null"], "format": "date-time"},
                          "waiting": {"type": "integer"}}},
            "last_used_at": {"type": ["string", "null"], "format": "date-time"},
            "created_at": {"type": "string", "format": "date-time"},
        }},
        "RunSummary": {"type": "object", "required": ["id", "status", "device", "runtime", "ws"], "properties": {
            "session": {"type": "string", "format": "uuid", "description": "A session's cell: its session"},
            "runtime": RUNTIME,
            "id": {"type": "string", "format": "uuid"},
            "status": {"type": "string", "enum": list(ev.STATUSES)},
            "device": {"type": "string", "pattern": DEVICE_PATTERN,
                       "description": "What the run asked for: a kind (cpu, gpu, tpu) or a specific "
                                      "device kind of one (gpu:h200)"},
            "ws": {"type": "string", "description": "Websocket path of the run's events"},
        }},
        "RunDetail": {"allOf": [{"$ref": "#/components/schemas/RunSummary"}, {
            "type": "object",
            "required": ["created_at", "events"],
            "properties": {
                "message": {"type": "string"},
                "worker": {"type": "string"},
                "ran_on": {"type": "string", "description": "The device string of the worker it ran on "
                                                            "(gpu:h200); empty before it started"},
                "device_kind": {"type": "string", "description": "The device kind jax named (NVIDIA H200)"},
                "code": {"type": "string"},
                "stdin": {"type": "string", "description": "What it read as its standard input (\"\": none)"},
                "created_at": {"type": "string", "format": "date-time"},
                "started_at": {"type": ["string", "null"], "format": "date-time"},
                "finished_at": {"type": ["string", "null"], "format": "date-time"},
                "wall_ms": nullable_num, "cpu_ms": nullable_num,
                "peak_memory_kb": {"type": ["integer", "null"]},
                "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"},
                           "description": "One page of the run's events, in seq order"},
                "events_next": {"type": ["integer", "null"],
                                "description": "Pass as ?after= for the next page; null on the last"},
            },
        }]},
        "CancelResult": {"type": "object", "required": ["id", "status"], "properties": {
            "id": {"type": "string", "format": "uuid"},
            "status": {"type": "string", "enum": list(ev.STATUSES)},
        }},
        "Event": {"type": "object", "required": ["seq", "type"], "properties": {
            "seq": {"type": "integer", "minimum": 1},
            "type": {"type": "string", "enum": list(ev.EVENT_TYPES)},
        }, "additionalProperties": True},
        "Device": {"type": "object", "required": ["kind", "online", "workers", "queue_depth"], "properties": {
            "kind": {"type": "string", "enum": kinds},
            "online": {"type": "boolean"},
            "workers": {"type": "integer"},
            "slots": {"type": "integer"},
            "busy": {"type": "integer"},
            "warm_runners": {"type": "integer"},
            "pool_size": {"type": "integer"},
            "platform": {"type": ["string", "null"]},
            "device_kind": {"type": ["string", "null"]},
            "device_count": {"type": ["integer", "null"]},
            "jax_version": {"type": ["string", "null"]},
            "libraries": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "Libraries importable in runs, with their versions"},
            "sandboxed": {"type": ["boolean", "null"]},
            "queue_depth": {"type": "integer", "description": "Runs waiting in the kind's own queue"},
            "free_runners": {"type": "integer", "description": "Slots not running a run now"},
            "memory_bytes": {"type": ["integer", "null"],
                             "description": "Memory of one device (a GPU's or TPU's; on CPU the host's)"},
            "jaxlib_version": {"type": ["string", "null"]},
            **CHIPS,
            "specific": {"type": "array", "description": "The specific device kinds online (gpu:h200)",
                         "items": {"type": "object", "required": ["device", "workers", "queue_depth"],
                                   "properties": {
                "device": {"type": "string", "pattern": DEVICE_PATTERN},
                "workers": {"type": "integer"}, "slots": {"type": "integer"}, "busy": {"type": "integer"},
                "free_runners": {"type": "integer"}, "queue_depth": {"type": "integer"},
                "platform": {"type": ["string", "null"]}, "device_kind": {"type": ["string", "null"]},
                "device_count": {"type": ["integer", "null"]}, "memory_bytes": {"type": ["integer", "null"]},
                "jax_version": {"type": ["string", "null"]}, "jaxlib_version": {"type": ["string", "null"]},
                **CHIPS,
            }}},
        }},
        "RuntimeList": {"type": "object", "required": ["runtimes", "default", "retired"], "properties": {
            "runtimes": {"type": "array", "items": {"type": "object", "required": [
                "id", "title", "jax", "jaxlib", "numpy", "python", "default", "kinds", "libraries"], "properties": {
                "id": RUNTIME, "title": {"type": "string"}, "jax": {"type": ["string", "null"]},
                "jaxlib": {"type": ["string", "null"]}, "numpy": {"type": ["string", "null"]},
                "python": {"type": "string"}, "default": {"type": "boolean"},
                "kinds": {"type": "array", "items": {"type": "string", "enum": kinds},
                          "description": "The kinds with a worker of this runtime online now"},
                "libraries": {"type": "object", "additionalProperties": {"type": "string"}}}}},
            "default": RUNTIME,
            "retired": {"type": "object", "additionalProperties": RUNTIME,
                        "description": "Retired ids and the successor each runs on"}}},
        "DeviceList": {"type": "object", "required": ["devices", "server_time"], "properties": {
            "devices": {"type": "array", "items": {"$ref": "#/components/schemas/Device"}},
            "server_time": {"type": "number",
                            "description": "The server's clock, Unix seconds (events' ts are on it)"}}},
    }
