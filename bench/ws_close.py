"""Sockets that lose their last frames at the close: daphne as it comes against ``web.server``.

Both servers run the same small ASGI application (this module's ``application``): it accepts,
sends four events a moment apart (``queued``, ``started``, ``stdout``, ``finished``) and closes,
as a run's socket does. Clients follow sockets the way ``bench.stack.Stack.watch`` and the
README's client do (websockets' sync client, one thread each, many at once), in rounds that
alternate between the two servers, and count the sockets that closed without ``finished``.

    .venv/bin/python -m bench.ws_close                 # 6 rounds of 1200 sockets, 64 at a time
    .venv/bin/python -m bench.ws_close --rounds 2 --sockets 600
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

EVENTS = ("queued", "started", "stdout", "finished")


async def application(scope, receive, send):
    if scope["type"] != "websocket":
        return
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    for seq, kind in enumerate(EVENTS, 1):
        await asyncio.sleep(random.random() * 0.2)
        await send({"type": "websocket.send", "text": json.dumps({"seq": seq, "type": kind})})
    await send({"type": "websocket.close", "code": 1000})
    while (await receive())["type"] != "websocket.disconnect":
        pass


def follow(port: int) -> tuple[list[str], str]:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    kinds: list[str] = []
    try:
        with connect(f"ws://127.0.0.1:{port}/ws/", open_timeout=30) as ws:
            while True:
                kinds.append(json.loads(ws.recv(timeout=60))["type"])
    except ConnectionClosed as closed:
        return kinds, repr(closed.__cause__) if closed.__cause__ else "closed"
    except Exception as e:  # noqa: BLE001 - a socket that failed otherwise is counted with its error
        return kinds, repr(e)


def one_round(port: int, sockets: int, at_once: int) -> dict:
    t0 = time.monotonic()
    with ThreadPoolExecutor(at_once) as pool:
        results = list(pool.map(lambda _: follow(port), range(sockets)))
    lost = [r for r in results if "finished" not in r[0]]
    return {"sockets": sockets, "lost_finished": len(lost), "wall_s": round(time.monotonic() - t0, 2),
            "causes": sorted({cause for _, cause in lost})}


def start(module: str, port: int) -> subprocess.Popen:
    from bench.stack import ROOT

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "web.settings", "DEBUG": "1"}
    proc = subprocess.Popen([sys.executable, "-m", module, "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=1024",
                             "bench.ws_close:application"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    import socket

    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{module} did not start") from None
            time.sleep(0.1)


def main() -> None:
    from bench.stack import free_port

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--sockets", type=int, default=1200)
    parser.add_argument("--at-once", type=int, default=64)
    args = parser.parse_args()
    servers = {name: (module, free_port()) for name, module in (("daphne", "daphne"), ("web.server", "web.server"))}
    procs = [start(module, port) for module, port in servers.values()]
    totals = {name: {"sockets": 0, "lost_finished": 0, "causes": set()} for name in servers}
    try:
        for index in range(args.rounds):
            for name, (_module, port) in servers.items():
                result = one_round(port, args.sockets, args.at_once)
                print(json.dumps({"round": index + 1, "server": name, **result}), flush=True)
                totals[name]["sockets"] += result["sockets"]
                totals[name]["lost_finished"] += result["lost_finished"]
                totals[name]["causes"].update(result["causes"])
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| server | sockets | closed without `finished` | per 1000 | causes |")
    print("|---|---:|---:|---:|---|")
    for name, t in totals.items():
        print(f"| {name} | {t['sockets']} | {t['lost_finished']} | {1000 * t['lost_finished'] / t['sockets']:.2f} "
              f"| {', '.join(sorted(t['causes'])) or '-'} |")


if __name__ == "__main__":
    main()
