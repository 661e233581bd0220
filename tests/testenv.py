"""Loaded as a pytest plugin (``-p tests.testenv``) before Django reads its settings: the test
suite's environment, so the in-process side and the stack's subprocesses agree.

When the suite runs in parallel (``pytest -n 2``, pytest-xdist), each worker process has a Redis
server of its own, started here and gone with it, so that two workers' stacks never take each
other's queued runs, and a test database of its own (pytest-django names it after the worker).

    pytest (the controller)
      ├─ worker gw0 ── redis-server on a free port; its stacks: daphne, recorder, executor
      └─ worker gw1 ── redis-server on another; its stacks
"""

import atexit
import os
from pathlib import Path
import shutil
import signal
import socket
import subprocess
import time


def _private_redis() -> str:
    """A Redis server of this process's own, on a free port of the loopback, stopped when the
    process ends (and by the kernel if it dies: PR_SET_PDEATHSIG)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def die_with_parent():
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    server = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1", "--port", str(port),
         "--save", "", "--appendonly", "no", "--databases", "16"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
    atexit.register(server.terminate)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the test worker's own redis-server did not start on port {port}")
        time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/15"


if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TEST_REDIS_URL"] = _private_redis()
# The suite's own SQLite file (the controller names it; its workers inherit the name and add their
# own suffix): two runs side by side on one checkout never share one.
os.environ.setdefault("TEST_DATABASE_NAME",
                      str(Path(__file__).resolve().parents[1] / "var" / f"test-{os.getpid()}.sqlite3"))
# Tests use their own Redis database so they never see a developer's runs.
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ["REDIS_URL"] = os.environ["TEST_REDIS_URL"]
os.environ["RUN_RATE_LIMIT_PER_MINUTE"] = "0"
os.environ["WATCHDOG_EVERY_S"] = "1"
# Settings fail closed without DEBUG=1: the suite runs as production does, with a key of its own.
os.environ.setdefault("SECRET_KEY", "test-suite-secret-key-not-for-production-" + "x" * 20)
# Fair shares are off, as the rate limit is: the suite starts many runs from one address at once.
# tests/integration/test_quotas.py turns them on for its own stack and settings.
QUOTAS_OFF = {"RUN_MAX_ACTIVE_PER_CLIENT": "0", "RUN_BUDGET_S_PER_HOUR": "0", "RUN_BUDGET_S_PER_DAY": "0",
              "RUN_QUEUE_MAX": "0"}
os.environ.update(QUOTAS_OFF)
