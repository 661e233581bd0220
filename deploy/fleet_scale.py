"""Executor nodes on plain hosts, started and stopped by how much work there is: what KEDA does
on Kubernetes (deploy/keda-scaledobject.yaml), for a fleet of machines with systemd.

    .venv/bin/python deploy/fleet_scale.py --nodes /etc/jax-playground/cpu-nodes --device cpu

Every run (a timer, once a minute) it reads, from the broker, the runs waiting in the device's
queue (every priority step's list) and the runs the online nodes are running (their heartbeats),
and wants ceil((waiting + running) / slots per node) nodes, at least --min and at most as many as
the file names. It starts the first that many hosts of the file (``systemctl start
playground-executor``, over ssh) and stops the rest (``systemctl stop --no-block``: a node
drains, finishing its runs, before it exits). Stopping one that is already stopped, or starting
one that runs, changes nothing. --dry-run says what it would do.

Needs REDIS_URL (the same as every process's) and this checkout's executor package: run it from
the installation (cd /opt/jax-playground).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from executor import registry, runtimes


def wanted(waiting: int, running: int, slots: int, minimum: int, maximum: int) -> int:
    """Nodes for the runs waiting and running, ``slots`` runs a node."""
    return max(minimum, min(maximum, math.ceil((waiting + running) / max(slots, 1))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/fleet_scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, required=True,
                        help="hosts that may run an executor, one a line, in the order they are started")
    parser.add_argument("--device", default="cpu", help="the queue's device and runtime: cpu, gpu:h200, cpu@jax-0.4.38")
    parser.add_argument("--slots", type=int, default=2, help="runs at once a node (its EXECUTOR_CONCURRENCY)")
    parser.add_argument("--min", type=int, default=1, help="nodes kept however idle (a kind with none refuses runs)")
    parser.add_argument("--ssh", default="ssh", help="how to reach a host (ssh, or a wrapper of yours)")
    parser.add_argument("--unit", default="playground-executor")
    parser.add_argument("--dry-run", action="store_true", help="say what would be done, do nothing")
    args = parser.parse_args(argv)

    import redis

    hosts = [line.strip() for line in args.nodes.read_text().splitlines() if line.strip() and not line.startswith("#")]
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    waiting = registry.queue_depth(client, args.device)
    # The workers of the device's runtime (a bare device is the first runtime's, as its queue is).
    serving = args.device if "@" in args.device else f"{args.device}@{runtimes.FIRST}"
    running = sum(int(w.get("busy", 0)) for w in registry.online_workers(client, serving))
    count = wanted(waiting, running, args.slots, min(args.min, len(hosts)), len(hosts))
    print(f"{args.device}: {waiting} waiting, {running} running: {count} of {len(hosts)} nodes", flush=True)
    failed = 0
    for n, host in enumerate(hosts):
        action = ["systemctl", "start", args.unit] if n < count else ["systemctl", "stop", "--no-block", args.unit]
        print(f"{host}: {' '.join(action)}", flush=True)
        if not args.dry_run:
            failed += subprocess.run([*args.ssh.split(), host, *action], timeout=60).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
