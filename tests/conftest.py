"""Fixtures that start the real stack: daphne, a recorder worker (with the watchdog's beat) and a
CPU executor worker, as subprocesses against the machine's Redis and the test database.

    pytest
      ├─ daphne web.asgi            (HTTP + websockets, port chosen at random)
      ├─ celery -A web worker -Q record -B
      └─ celery -A executor.worker worker -Q exec.cpu -P threads
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_REDIS_URL = os.environ["TEST_REDIS_URL"]  # set by tests/testenv.py


def sandbox_backend() -> str:
    """The real sandbox wherever this machine has it; tests never run hostile code without it."""
    from executor.sandbox import LAUNCHERS

    if "bwrap" in LAUNCHERS and shutil.which("bwrap"):
        return "bwrap"
    return "none"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url(db_settings: dict) -> str:
    engine = db_settings["ENGINE"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{db_settings['NAME']}"
    if engine.endswith("postgresql"):
        host = db_settings.get("HOST") or "127.0.0.1"
        port = db_settings.get("PORT") or 5432
        user = db_settings.get("USER") or "postgres"
        password = db_settings.get("PASSWORD") or ""
        auth = f"{user}:{password}@" if password else f"{user}@"
        return f"postgres://{auth}{host}:{port}/{db_settings['NAME']}"
    raise RuntimeError(f"tests do not know how to share database engine {engine}")


@dataclass
class Stack:
    url: str
    env: dict
    logdir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")

    def start(self, name: str, argv: list[str], extra_env: dict | None = None) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "ab")
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={**self.env, **(extra_env or {})}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def start_executor(self, name: str = "executor", **extra_env) -> subprocess.Popen:
        return self.start(name, [
            sys.executable, "-m", "celery", "-A", "executor.worker", "worker", "-Q", "exec.cpu",
            "-P", "threads", "-c", "2", "-n", f"cpu-{name}@%h", "--without-gossip", "--without-mingle",
            "-l", "info",
        ], {k: str(v) for k, v in extra_env.items()})

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM if name != "executor" else signal.SIGKILL)

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def post(self, path: str, body) -> tuple[int, dict]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def wait_online(self, kind: str = "cpu", timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                devices = {d["kind"]: d for d in self.get("/api/devices")["devices"]}
                if devices[kind]["online"] and devices[kind]["warm_runners"]:
                    return devices[kind]
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"no {kind} executor online after {timeout} s; logs in {self.logdir}")

    def wait_finished(self, run_id: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.get(f"/api/runs/{run_id}")
            if run["status"] not in ("queued", "running"):
                return run
            time.sleep(0.1)
        raise TimeoutError(f"run {run_id} still {run['status']} after {timeout} s")


@pytest.fixture(scope="session")
def redis_client():
    import redis

    client = redis.Redis.from_url(TEST_REDIS_URL)
    client.flushdb()
    return client


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker, redis_client, tmp_path_factory):
    """The whole playground, running, on the test database."""
    from django.conf import settings

    logdir = tmp_path_factory.mktemp("stack-logs")
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "web.settings",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "REDIS_URL": TEST_REDIS_URL,
        "RUN_RATE_LIMIT_PER_MINUTE": "0",
        "WATCHDOG_EVERY_S": "1",
        "EXECUTOR_SANDBOX": sandbox_backend(),
        "EXECUTOR_ALLOW_UNSANDBOXED": "1" if sandbox_backend() == "none" else "0",
        "EXECUTOR_POOL_SIZE": "2",
        "PYTHONUNBUFFERED": "1",
    }
    stack = Stack(url=f"http://127.0.0.1:{port}", env=env, logdir=logdir)
    stack.start("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "web.asgi:application"])
    stack.start("recorder", [
        sys.executable, "-m", "celery", "-A", "web", "worker", "-Q", "record", "-B",
        "-s", str(logdir / "beat-schedule"), "-P", "threads", "-c", "4", "-n", "recorder@%h",
        "--without-gossip", "--without-mingle", "-l", "info",
    ])
    stack.start_executor()
    try:
        stack.wait_online()
        yield stack
    finally:
        stack.stop()
