"""A room behind one address: browsers signed out behind one workshop's Wi-Fi press Run at once.

    python -m bench.room                     # its own stack: 30 browsers, print(1), 3 rounds
    python -m bench.room --people 40 --rounds 5

Each person is a browser as the page makes it one: it loads the page (``GET /``) for its
cookies, its identity among them, and opens the socket the page keeps for its next run
(``/ws/runs/new/``, with its cookies and, as a script, no Origin). Everyone is one address: the
stack trusts one proxy, and every request says the same X-Forwarded-For. Once every socket is
open, all send a start of ``print(1)`` at once and follow their run to its end on the same
socket. Fair shares are the defaults (web/settings.py: a person's 4 runs at once, 30 a minute,
1800 executor seconds an hour; 8 at once for the address's requests with no identity; the room's
ROOM_SIZE, 40). One CPU executor with 2 slots. A last round is the same room without cookies,
as scripts are and as every browser was before it had an identity: one client, the address.
Printed for each round: accepted, finished (succeeded), and the time from a start sent to its
``finished`` received: median, p90, max.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

from bench.stack import Stack, follow_run, own_stack

ADDRESS = "198.51.100.77"
CODE = "print(1)\n"
SLOW_CODE = "import time\ntime.sleep(1)\nprint(1)\n"


def press_run_together(stack: Stack, people: int, address: str = ADDRESS, code: str = CODE,
                       timeout: float = 120, cookies: bool = True) -> list[dict]:
    """``people`` browsers behind ``address``: each loads the page, opens a run socket, and once
    all are open every one starts ``code`` at once (without ``cookies``: sending none back). For
    each: the server's first answer (``reply``), the run's events (``watched``, None when
    refused) and the seconds from its start sent to its ``finished`` received (``finished_s``),
    or what went wrong (``error``)."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    sent = [stack.page_cookie(address) if cookies else "" for _ in range(people)]
    opened = threading.Barrier(people)
    results: list[dict] = [{} for _ in range(people)]

    def person(i: int) -> None:
        headers = {"X-Forwarded-For": address, **({"Cookie": sent[i]} if sent[i] else {})}
        try:
            with connect(f"{stack.ws_url}/ws/runs/new/", open_timeout=60, max_size=1024**2,
                         additional_headers=headers) as ws:
                opened.wait(timeout)
                t0 = time.monotonic()
                ws.send(json.dumps({"op": "start", "code": code}))
                reply = json.loads(ws.recv(timeout=timeout))
                watched = follow_run(ws, t0 + timeout) if reply.get("type") == "started_run" else None
            done = watched is not None and watched.finished is not None
            results[i] = {"reply": reply, "watched": watched,
                          "finished_s": watched.arrived[-1] - t0 if done else None}
        except (OSError, TimeoutError, ValueError, threading.BrokenBarrierError, WebSocketException) as exc:
            # A person whose socket failed is counted as refused and said; the barrier is broken so
            # that the others do not wait for them.
            opened.abort()
            results[i] = {"reply": {}, "watched": None, "finished_s": None, "error": repr(exc)}

    threads = [threading.Thread(target=person, args=(i,)) for i in range(people)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 60)
    return results


def summary(results: list[dict]) -> dict:
    accepted = [r for r in results if r["reply"].get("type") == "started_run"]
    finished = [r for r in accepted if r["watched"] is not None and r["watched"].finished is not None]
    succeeded = [r for r in finished if r["watched"].finished["status"] == "succeeded"]
    times = sorted(r["finished_s"] * 1000 for r in finished)
    refusals = sorted({r["reply"].get("error", "")[:120] for r in results if r["reply"].get("type") == "refused"})
    return {
        "people": len(results), "accepted": len(accepted), "finished": len(finished), "succeeded": len(succeeded),
        "to_finished_ms": {"median": round(statistics.median(times), 1),
                           "p90": round(times[int(0.9 * (len(times) - 1))], 1),
                           "max": round(times[-1], 1)} if times else None,
        **({"refusals": refusals} if refusals else {}),
        **({"errors": [r["error"] for r in results if "error" in r]} if any("error" in r for r in results) else {}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.room", description=__doc__.split("\n")[0])
    parser.add_argument("--people", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="rooms pressing Run, one after another")
    args = parser.parse_args()
    # Fair shares as deployed (own_stack turns them off for the other benchmarks).
    shares = {"RUN_RATE_LIMIT_PER_MINUTE": "30", "RUN_MAX_ACTIVE_PER_CLIENT": "4", "RUN_BUDGET_S_PER_HOUR": "1800",
              "RUN_BUDGET_S_PER_DAY": "14400", "RUN_QUEUE_MAX": "500", "WS_MAX_PER_CLIENT": "32",
              "WS_MAX_NEW_PER_CLIENT": "64"}
    rounds = []
    # Then a snippet that lasts a second, with and without cookies: print(1) ends in tens of
    # milliseconds, so slots free while the later starts arrive and the address's share barely
    # shows; a second keeps every run in its slot while the room presses Run.
    plan = [(True, CODE)] * args.rounds + [(False, CODE), (True, SLOW_CODE), (False, SLOW_CODE)]
    with own_stack("room", TRUSTED_PROXIES="1", **shares) as stack:
        for cookies, code in plan:
            stack.wait_online()  # the warm pool refilled: each round starts from a settled stack
            rounds.append({"cookies": cookies, "code": code.strip().replace("\n", "; "),
                           **summary(press_run_together(stack, args.people, cookies=cookies, code=code))})
            time.sleep(2)
    print(json.dumps(rounds, indent=2))
    print("\n| round | snippet | accepted | finished (succeeded) | to finished: median | p90 | max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for i, r in enumerate(rounds, 1):
        t = r["to_finished_ms"] or {"median": "-", "p90": "-", "max": "-"}
        label = f"{i}" if r["cookies"] else f"{i}, no cookies (one client: the address)"
        print(f"| {label} | `{r['code']}` | {r['accepted']}/{r['people']} | {r['finished']} ({r['succeeded']}) | "
              f"{t['median']} ms | {t['p90']} ms | {t['max']} ms |")
    return 0 if all(r["succeeded"] == r["people"] for r in rounds if r["cookies"]) else 1


if __name__ == "__main__":
    sys.exit(main())
