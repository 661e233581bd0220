"""The assistants' MCP endpoint against the API it stands on: what ``run_jax`` adds to a run.

    python -m bench.mcp                      # starts its own stack
    python -m bench.mcp --url http://127.0.0.1:8000 --n 50

Each sample is sequential, over loopback against daphne, once the warm pool is full again (as
bench.latency waits), the two ways interleaved:

    api        POST /api/runs, then the run's websocket until its ``finished`` (bench.latency)
    mcp        one ``tools/call`` of run_jax on an MCP session of the SDK's client, already
               initialized: one POST /mcp, answered once the run has ended, with its whole answer

and, apart: ``tools/list`` on that session; a new session's opening with the SDK's client (its
HTTP client made, ``initialize`` and its ``initialized`` notification: two POSTs), which an
assistant's client pays once; and ``initialize`` alone as one plain POST (urllib), the server's
share of that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from bench.latency import SNIPPETS, one_run, wait_pool_full
from bench.stack import RedisServer, own_stack


def figures(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median_ms": statistics.median(ordered), "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
            "n": len(ordered)}


async def opened(url: str):
    """An initialized session of the SDK's client, and what closes it."""
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    stack = AsyncExitStack()
    read, write = await stack.enter_async_context(streamable_http_client(url + "/mcp"))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session, stack


def initialize(url: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    request = urllib.request.Request(url + "/mcp", data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        if "result" not in json.load(answer):
            raise RuntimeError("initialize was not answered")


async def measure(url: str, n: int, warmup: int = 3) -> dict:
    session, closing = await opened(url)
    try:
        code = SNIPPETS["print(1)"]

        async def by_mcp() -> float:
            t0 = time.perf_counter()
            result = await session.call_tool("run_jax", {"code": code})
            took = (time.perf_counter() - t0) * 1000
            if result.is_error or result.structured_content["status"] != "succeeded":
                raise RuntimeError(f"run_jax: {result.content}")
            return took

        async def by_api() -> float:
            found = await one_run(url, code)
            if found["status"] != "succeeded":
                raise RuntimeError(f"the API's run: {found}")
            return found["total_ms"]

        for _ in range(warmup):
            await by_api()
            await by_mcp()
        samples: dict[str, list[float]] = {"api": [], "mcp": []}
        for _ in range(n):
            for name, way in (("api", by_api), ("mcp", by_mcp)):
                await asyncio.to_thread(wait_pool_full, url)
                samples[name].append(await way())
        listing = []
        for _ in range(n):
            t0 = time.perf_counter()
            await session.list_tools()
            listing.append((time.perf_counter() - t0) * 1000)
    finally:
        await closing.aclose()
    opening = []
    for _ in range(n):
        t0 = time.perf_counter()
        _session, closing = await opened(url)
        opening.append((time.perf_counter() - t0) * 1000)
        await closing.aclose()
    plain = []
    for _ in range(n):
        t0 = time.perf_counter()
        await asyncio.to_thread(initialize, url)
        plain.append((time.perf_counter() - t0) * 1000)
    out = {"run print(1): POST /api/runs + websocket": figures(samples["api"]),
           "run print(1): run_jax over MCP": figures(samples["mcp"]),
           "tools/list": figures(listing), "a new session, the SDK's client": figures(opening),
           "initialize, one plain POST": figures(plain)}
    for label, found in out.items():
        print(f"  {label:44} median {found['median_ms']:7.1f} ms   p95 {found['p95_ms']:7.1f} ms", flush=True)
    api, mcp = out["run print(1): POST /api/runs + websocket"], out["run print(1): run_jax over MCP"]
    out["mcp_minus_api_ms"] = mcp["median_ms"] - api["median_ms"]
    print(f"  run_jax costs {out['mcp_minus_api_ms']:+.1f} ms over the API's run (medians)", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running playground; default: start one")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.url:
        results = asyncio.run(measure(args.url, args.n))
    else:
        import tempfile

        # A Redis server of its own: nothing queued by another stack is run, or timed, with it.
        with tempfile.TemporaryDirectory(prefix="bench-mcp-redis-") as tmp:
            redis = RedisServer(Path(tmp))
            redis.start()
            try:
                with own_stack("mcp", redis.url) as stack:
                    stack.wait_online()
                    results = asyncio.run(measure(stack.url, args.n))
            finally:
                redis.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
