"""The MCP server: its tools and resources, each a call of the actions the API's views call.

    run_jax         POST /api/runs, followed to its end (results.py)
    explain_error   the same run, answered with only what went wrong
    share           POST /api/snippets: a permanent link, pinned to its JAX and device
    compare         POST /api/comparisons, both sides followed to their ends
    list_runtimes   GET /api/runtimes
    list_devices    GET /api/devices
    complete        POST /api/analyse's completion, from the analysers beside the executors
    resources       the gallery's examples (playground/gallery.py), jax-playground://examples/<slug>

Every tool acts as its caller (asgi.py: a Bearer token's account, else anonymous, counted as a
script's requests are) through the same admission as the API. A refusal is a tool error
(``isError``) whose text is the API's ``error`` for it, in the caller's language (English unless
Accept-Language asks for another), with the API's status and data beside it; the server stays up.
The tools' own words are English: they are read by assistants."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Annotated

import redis.exceptions
from django.conf import settings
from django.http import Http404
from django.utils import translation
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import TextResource
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from executor import events as ev
from playground import devices, runtimes
from playground.actions.analyse import check_analyse, do_analyse
from playground.actions.runs import check_start_run, run_limits
from playground.gallery import examples
from playground.serializers import run_summary
from snippets.actions import check_create_comparison, check_create_snippet
from snippets.serializers import comparison_detail
from web.api import QUEUE_UNREACHABLE
from web.clients import make_client
from web.errors import ActionError

from .asgi import Caller, caller_of, in_thread
from .results import (OUTPUT_MAX_CHARS, WAIT_MARGIN_S, built_profile, error_answer, events_of, figures_of, follow,
                      run_answer)

EXAMPLES_URI = "jax-playground://examples/"
CODE_KIB = settings.RUN_MAX_CODE_BYTES // 1024

INSTRUCTIONS = f"""\
The JAX Playground runs Python with JAX in a sandbox on its executors (CPU, and GPU or TPU where \
the site has them) and explains what happened: the error in plain words with its line, each \
jit-compiled function's jaxpr (and HLO), compile and run times, FLOPs and bytes from XLA's cost \
analysis, against the device's peak where known. Use run_jax to run code and see all of that, \
explain_error when only the failure matters, share for a permanent link pinned to its JAX and \
device, compare to run the same code on two runtimes or devices. Code is at most {CODE_KIB} KiB; \
a run has a wall clock of {settings.RUN_LIMITS["wall_s"]} s by default. %timeit works in code, \
as in IPython. The gallery's examples are resources."""

mcp = MCPServer(name="jax-playground", title="JAX Playground", instructions=INSTRUCTIONS)
# At INFO the SDK logs the end of each stateless request's transport: a line a request, which
# daphne's access log has already. Its warnings and errors still come through.
logging.getLogger("mcp").setLevel(logging.WARNING)

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def session_manager():
    """A new session manager of the server, for an event loop (asgi.py runs it): stateless, JSON
    answers, the body limit daphne has (web/server.py). The Host and Origin checks are the
    mount's, against the site's own settings, so the SDK's (made for a server on localhost) are off."""
    mcp.streamable_http_app(stateless_http=True, json_response=True, max_request_body_size=settings.MAX_REQUEST_BYTES,
                            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return mcp.session_manager


# Answering ---------------------------------------------------------------------------------------

REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def refusal(message: str, status: int, data: dict | None = None) -> CallToolResult:
    """A refusal as a tool error: the API's words, and its status and data (which limit, when to
    come back) beside them."""
    message = str(message)
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True,
                          structured_content={"error": message, "status": status, **(data or {})})


def answer(value: dict, figures: list[dict] = ()) -> CallToolResult:
    content = [TextContent(type="text", text=json.dumps(value, ensure_ascii=False)),
               *[ImageContent(type="image", data=f["data"], mime_type=f["mime"]) for f in figures]]
    return CallToolResult(content=content, structured_content=value)


async def _caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    if request is None:  # served in-process, with no HTTP request: anonymous, from nowhere
        return Caller(user=None, client=make_client(None), language=settings.LANGUAGE_CODE, base_url="")
    return await caller_of(request)


async def serve(ctx: Context, work) -> CallToolResult:
    """``await work(caller)``'s answer, or its refusal as the API says it."""
    caller = await _caller(ctx)
    with translation.override(caller.language):
        if caller.refused:
            return refusal(caller.refused, 401)
        try:
            found = await work(caller)
        except ActionError as exc:
            return refusal(exc.message, exc.status, exc.data)
        except Http404 as exc:
            return refusal(str(exc), 404)
        except REDIS_DOWN:
            return refusal(str(QUEUE_UNREACHABLE), 503, {"retry_after": 5})
    return found if isinstance(found, CallToolResult) else answer(found)


def _start(payload: dict, caller: Caller) -> dict:
    return run_summary(check_start_run(payload, client=caller.client, owner=caller.user))


def _run_payload(code, runtime, device, stdin, profile) -> dict:
    """The body POST /api/runs would have been sent."""
    payload = {"code": code, "runtime": runtime, "device": device, "stdin": stdin,
               "options": {"profile": True} if profile else None}
    return {key: value for key, value in payload.items() if value is not None}


async def _run(payload: dict, caller: Caller) -> tuple[dict, list[dict]]:
    """Start a run as its caller and follow it to its end: its summary and events."""
    run = await in_thread(_start)(payload, caller)
    return run, await follow(run["id"], run_limits(None, run["device"])["wall_s"] + WAIT_MARGIN_S)


# Parameters --------------------------------------------------------------------------------------

Code = Annotated[str, Field(description=(
    f"Python source to run, as a file (at most {CODE_KIB} KiB). jax, jax.numpy, numpy, scipy, optax, flax, "
    f"equinox, chex, einops and matplotlib import as usual; %timeit and %time lines work as in IPython; "
    f"plt.show() sends a figure."))]
SharedCode = Annotated[str, Field(description=f"Python source to share, as a file (at most {CODE_KIB} KiB).")]
EditedCode = Annotated[str, Field(description="The Python source being edited, whole.")]
Runtime = Annotated[str | None, Field(description=(
    "The runtime (a pinned JAX version) to run on, an id from list_runtimes; the site's default when omitted."))]
Device = Annotated[str | None, Field(description=(
    "Where to run: a device kind (cpu, gpu, tpu) or a specific kind of one (gpu:h200), as list_devices lists those "
    f"online; {settings.RUN_DEFAULT_DEVICE} when omitted."))]
Stdin = Annotated[str | None, Field(description="Text the code reads from standard input (input(), sys.stdin).")]
Profile = Annotated[bool, Field(description=(
    "Run under JAX's profiler: the answer's profile has a summary per device (busy time, time per op kind, top ops) "
    "and the URL of the Chrome trace (for Perfetto)."))]
IncludeHlo = Annotated[bool, Field(description=(
    "Also return each compiled function's StableHLO and optimized HLO text (long: ask only when needed)."))]


class Side(BaseModel):
    """One side of a comparison."""

    runtime: str | None = Field(None, description="A runtime id (list_runtimes); the default when omitted.")
    device: str | None = Field(None, description=f"A device kind (list_devices); {settings.RUN_DEFAULT_DEVICE} when "
                                                 f"omitted.")
    run: str | None = Field(None, description=(
        "Instead of a new run: the id of a run of this same code that already happened (one of your own)."))
    profile: bool = Field(False, description="Profile this side's run.")

    def payload(self) -> dict:
        side = {"runtime": self.runtime, "device": self.device, "run": self.run,
                "options": {"profile": True} if self.profile else None}
        return {key: value for key, value in side.items() if value is not None}


# Tools -------------------------------------------------------------------------------------------

@mcp.tool(annotations=RUNS, description=f"""\
Run JAX code in the playground's sandbox and wait for it to end (at most the run's wall clock, \
{settings.RUN_LIMITS["wall_s"]} s by default, plus {WAIT_MARGIN_S} s). Returns a JSON object: status \
(succeeded, failed, timed_out, limit_exceeded, cancelled, lost), stdout and stderr (each cut at \
{OUTPUT_MAX_CHARS} characters, and said when cut), error (exc_type, message, the snippet's line, a plain \
explanation where the error is a known one, a trimmed traceback), functions (each jit-compiled \
function: name, signature, jaxpr, compile_ms, trace_ms, lower_ms, flops, bytes_accessed, memory), \
timings (%timeit and jaxplay.bench results: mean/median ms, GFLOP/s and the share of the device's \
peak), arrays (the shapes of the code's top-level arrays), ran_on (device, platform, runtime, \
jax_version), usage (wall_ms, cpu_ms, peak memory), profile (with profile), and links (the \
run's API URL; share it for a page). Figures come as images. \
Refusals (too many runs, code too big, unknown device or runtime) are tool errors in the API's words.""")
async def run_jax(code: Code, ctx: Context, runtime: Runtime = None, device: Device = None, stdin: Stdin = None,
                  profile: Profile = False, include_hlo: IncludeHlo = False) -> CallToolResult:
    async def work(caller: Caller):
        run, events = await _run(_run_payload(code, runtime, device, stdin, profile), caller)
        if profile:  # its trace is built after the run's end: the answer has its summary
            events = [await in_thread(built_profile)(e, run["id"]) if e["type"] == ev.PROFILE and e.get("building")
                      else e for e in events]
        return answer(run_answer(run, events, caller, include_hlo=include_hlo), figures_of(events))

    return await serve(ctx, work)


@mcp.tool(annotations=RUNS, description="""\
Run code and return only what went wrong: the exception's type, message and line in the code, \
the playground's plain explanation of it where it knows the error (shape mismatches, tracer \
leaks, concretization errors, ...), a trimmed traceback and stderr; or how the run ended \
(timed out, over a limit); or that it ran without error. Use it to diagnose a failing snippet.""")
async def explain_error(code: Code, ctx: Context, runtime: Runtime = None, device: Device = None,
                        stdin: Stdin = None) -> CallToolResult:
    async def work(caller: Caller):
        run, events = await _run(_run_payload(code, runtime, device, stdin, False), caller)
        return error_answer(run, events, caller)

    return await serve(ctx, work)


def _share(payload: dict, caller: Caller) -> dict:
    snippet, created = check_create_snippet(payload, user=caller.user, client=caller.client)
    page = caller.url(snippet.get_absolute_url())
    return {"slug": snippet.slug, "url": page, "created": created, "title": snippet.title,
            "device": snippet.device, "runtime": snippet.runtime, "jax_version": snippet.jax_version or None,
            "jaxlib_version": snippet.jaxlib_version or None, "run": str(snippet.run_id) if snippet.run_id else None,
            "links": {"page": page, "py": f"{page}.py", "ipynb": f"{page}.ipynb", "json": f"{page}.json",
                      "embed": caller.url(f"/embed/{snippet.slug}"),
                      "api": caller.url(f"/api/snippets/{snippet.slug}")}}


@mcp.tool(annotations=RUNS, description="""\
Save code as a snippet and return its permanent link (url), pinned to its runtime's JAX and its \
device: the page shows the code and, when a run of it is given (the run id from run_jax, of this \
same code), that run's output; downloads as .py and .ipynb. The same content always gives the same \
link. Shares are limited per hour; a refusal is a tool error in the API's words.""")
async def share(code: SharedCode, ctx: Context,
                title: Annotated[str | None, Field(description="A title for the page (200 characters at most).")]
                = None,
                description: Annotated[str | None, Field(description="Markdown shown under the title.")] = None,
                run: Annotated[str | None, Field(description="A run id of this code (run_jax's run) to keep as the "
                                                             "page's output.")] = None,
                runtime: Runtime = None, device: Device = None) -> CallToolResult:
    payload = {key: value for key, value in {"code": code, "title": title, "description": description, "run": run,
                                             "runtime": runtime, "device": device}.items() if value is not None}

    async def work(caller: Caller):
        return await in_thread(_share)(payload, caller)

    return await serve(ctx, work)


def _compare(payload: dict, caller: Caller) -> dict:
    return comparison_detail(check_create_comparison(payload, user=caller.user, client=caller.client))


async def _side(side: dict, caller: Caller) -> dict:
    run = side["run"]
    if run["status"] in ev.TERMINAL_STATUSES:
        events = await events_of(run["id"])
    else:
        events = await follow(run["id"], run_limits(None, run["device"])["wall_s"] + WAIT_MARGIN_S)
    return {"name": side["name"], "label": side["label"], "jax": side["jax"], "saved": side["saved"],
            **run_answer(run, events, caller, texts=False)}


@mcp.tool(annotations=RUNS, description="""\
Run the same code on two runtimes (JAX versions) or two devices at once, wait for both, and return \
the comparison: its permanent link (url) and each side's label ("JAX 0.6.2 · CPU"), status, output, \
error, compiled functions with compile times and FLOPs, timings and wall time. sides is exactly two \
objects, each {runtime, device} for a new run, or {run} for a run of this code that already happened.""")
async def compare(code: Code, ctx: Context,
                  sides: Annotated[list[Side], Field(description="Exactly two sides, A then B.")],
                  title: Annotated[str | None, Field(description="A title for the comparison's page.")] = None,
                  ) -> CallToolResult:
    payload = {"code": code, "sides": [side.payload() for side in sides], **({"title": title} if title else {})}

    async def work(caller: Caller):
        made = await in_thread(_compare)(payload, caller)
        sides_found = await asyncio.gather(*[_side(side, caller) for side in made["sides"]])
        return {"slug": made["slug"], "url": caller.url(made["url"]), "title": made["title"],
                "sides": list(sides_found)}

    return await serve(ctx, work)


def _runtimes() -> dict:
    return {"runtimes": runtimes.describe_all(), "default": runtimes.default(), "retired": runtimes.retired()}


def _devices() -> dict:
    return {"devices": devices.describe_all(), "server_time": round(time.time(), 3)}


@mcp.tool(annotations=READS, description="""\
The runtimes a run can name: each with its id, its pinned JAX, jaxlib and libraries, and the \
device kinds whose executors serve it now; the default's id; retired ids and their successors.""")
async def list_runtimes(ctx: Context) -> CallToolResult:
    return await serve(ctx, lambda caller: in_thread(_runtimes)())


@mcp.tool(annotations=READS, description="""\
The device kinds (cpu, gpu, tpu) and whether executors of each are online now: their platform, \
device kind (e.g. NVIDIA H200), device count and memory, JAX version, warm runners, queue depth \
and specific kinds (gpu:h200). A kind that is offline refuses runs at once.""")
async def list_devices(ctx: Context) -> CallToolResult:
    return await serve(ctx, lambda caller: in_thread(_devices)())


@mcp.tool(annotations=READS, description="""\
Code completion at a position, as the playground's editor has it: from jedi, in the environment \
runs use (the runtime's JAX and libraries). Returns items, each with its label, kind, signature and \
a line of docs. line and column count from 1; the position is where the cursor would be (after \
"jnp." to list jax.numpy).""")
async def complete(code: EditedCode, ctx: Context,
                   line: Annotated[int, Field(description="The cursor's line, from 1.")],
                   column: Annotated[int, Field(description="The cursor's column, from 1 (after the last "
                                                            "character typed).")],
                   runtime: Runtime = None) -> CallToolResult:
    async def work(caller: Caller):
        request = await in_thread(check_analyse)({"op": "complete", "code": code, "line": line, "column": column,
                                                  "runtime": runtime}, client=caller.client)
        return await do_analyse(request)

    return await serve(ctx, work)


# Resources ---------------------------------------------------------------------------------------

for _example in examples():
    mcp.add_resource(TextResource(uri=f"{EXAMPLES_URI}{_example['slug']}", name=_example["slug"],
                                  title=_example["title"], description=_example["description"] or _example["title"],
                                  mime_type="text/x-python", text=_example["code"]))
