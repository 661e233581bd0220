"""A web process of one's own (``python -m web.server``, daphne with the body limit), with the
environment a test gives it: Redis, database, TMPDIR of its choosing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bench.stack import ROOT, RedisServer, free_port


class WebServer:
    def __init__(self, env: dict, logfile: Path, module: str = "web.server", app: str = "web.asgi:application"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logfile = logfile
        self.log = open(logfile, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "-e", f"tcp:port={self.port}:interface=127.0.0.1", app],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/healthz")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the web server did not start:\n{logfile.read_text()}") from None
                time.sleep(0.1)

    def get(self, path: str, timeout: float = 10) -> tuple[int, dict, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
                return r.status, json.load(r), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e), dict(e.headers)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def own_redis(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def web_server(tmp_path):
    """``web_server(env)``: start one (stopped after the test) with exactly that environment."""
    servers = []

    def start(env: dict, module: str = "web.server", app: str = "web.asgi:application") -> WebServer:
        server = WebServer(env, tmp_path / f"web-{len(servers)}.log", module, app)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def base_env(**extra) -> dict:
    """The environment of a process started by these tests: the suite's (tests/testenv.py), with
    ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return {**env, "DJANGO_SETTINGS_MODULE": "web.settings", "PYTHONUNBUFFERED": "1",
            **{k: str(v) for k, v in extra.items()}}


@pytest.fixture(autouse=True)
def fresh_readiness():
    """/readyz keeps its answer a second (web/health.py): each test checks what it set up."""
    from web.health import forget_readiness

    forget_readiness()
    yield
    forget_readiness()
