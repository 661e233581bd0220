"""The analysers of one node: ``ANALYSER_PROCESSES`` warm ``python -m executor.analyser``
processes, each with a thread that takes requests from Redis (``wire``), hands them to its
process and puts the answer on the request's reply key. A process that spends more than
``ANALYSER_REQUEST_CPU_MS`` of CPU on a request (CPU, not wall time: a loaded node is slow at
everything, a pathological input costs CPU), or ``ANALYSER_REQUEST_TIMEOUT_S`` of wall time, or
grows past ``ANALYSER_MAX_MEMORY_MB``, is killed and replaced (while the others answer); the
request is answered with an error, which the editor shows as no suggestions. The processes run
in the executor's environment, so they answer for the libraries a run of the code would get.
Nothing here runs the code."""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

from executor.envvars import env_int

from . import wire

log = logging.getLogger("executor.analyser")

PROCESSES = env_int("ANALYSER_PROCESSES", 2, minimum=0)
REQUEST_CPU_MS = env_int("ANALYSER_REQUEST_CPU_MS", 5000, minimum=50)
REQUEST_TIMEOUT_S = env_int("ANALYSER_REQUEST_TIMEOUT_S", 10, minimum=1)
MAX_MEMORY_MB = env_int("ANALYSER_MAX_MEMORY_MB", 2048, minimum=256)
START_TIMEOUT_S = env_int("ANALYSER_START_TIMEOUT_S", 300, minimum=5)
ROOT = Path(__file__).resolve().parents[2]
MEMORY_CHECK_S = 0.05
EMPTY_DIR = tempfile.mkdtemp(prefix="analyser-cwd-")


def cpu_s(pid: int) -> float:
    """The CPU time (user and system) a process has used."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class Analyser:
    """One warm analyser process and the thread that serves it."""

    def __init__(self, client: redis.Redis, index: int, stopping: threading.Event, *,
                 runtime: str = wire.DEFAULT_RUNTIME, python: str = sys.executable):
        self.redis = client
        self.runtime, self.python = runtime, python
        self.index = index
        self.stopping = stopping
        self.proc: subprocess.Popen | None = None
        self.ready = False  # warm and answering (a process still warming up is not)
        self.thread = threading.Thread(target=self.serve, name=f"analyser-{index}", daemon=True)
        self.answered = 0

    def start_process(self) -> bool:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1"}
        # Run from an empty folder: the playground's own files are not the analysis's to read.
        self.proc = subprocess.Popen([self.python, "-m", "executor.analyser"], cwd=EMPTY_DIR, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        line = self.read_line(START_TIMEOUT_S)
        if not line or not json.loads(line).get("ready"):
            log.warning("analyser %d did not start within %d s", self.index, START_TIMEOUT_S)
            self.kill()
            return False
        log.info("analyser %d ready (pid %d, %.0f MB)", self.index, self.proc.pid, rss_mb(self.proc.pid))
        self.ready = True
        return True

    def read_line(self, timeout: float, cpu_limit_s: float | None = None) -> bytes | None:
        """The process's next line within ``timeout``, watching its memory (and, with
        ``cpu_limit_s``, the CPU it spends) meanwhile."""
        assert self.proc is not None and self.proc.stdout is not None
        cpu_at_start = cpu_s(self.proc.pid)
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                if selector.select(min(left, MEMORY_CHECK_S)):
                    return self.proc.stdout.readline() or None
                if rss_mb(self.proc.pid) > MAX_MEMORY_MB:
                    log.warning("analyser %d passed %d MB; replaced", self.index, MAX_MEMORY_MB)
                    return None
                if cpu_limit_s is not None and cpu_s(self.proc.pid) - cpu_at_start > cpu_limit_s:
                    log.info("analyser %d spent over %.1f s of CPU on a request; replaced", self.index, cpu_limit_s)
                    return None
                if self.proc.poll() is not None:
                    return None
        return None

    def kill(self) -> None:
        self.ready = False
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def ask(self, request: dict) -> dict:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.kill()
            return {"error": "the analyser stopped"}
        line = self.read_line(REQUEST_TIMEOUT_S, REQUEST_CPU_MS / 1000)
        if line is None:
            self.kill()
            return {"error": "the code took too long to analyse (the analyser was restarted)"}
        return json.loads(line)

    def serve(self) -> None:
        key = wire.requests_key(self.runtime)
        while not self.stopping.is_set():
            # A thread without a warm process takes no request: the others answer meanwhile.
            if self.proc is None and not self.start_process():
                self.stopping.wait(1)
                continue
            try:
                popped = self.redis.brpop([key], timeout=1)
                if popped is None:
                    continue
                request = json.loads(popped[1])
                answer = self.answer(request)
                pipe = self.redis.pipeline()
                pipe.lpush(wire.reply_key(request["id"]), json.dumps(answer))
                pipe.expire(wire.reply_key(request["id"]), wire.REPLY_TTL_S)
                pipe.execute()
                self.answered += 1
            except redis.RedisError as exc:
                log.warning("analyser %d: Redis: %s", self.index, exc)
                self.stopping.wait(1)
            except (ValueError, KeyError, TypeError) as exc:  # a request that is not one
                log.warning("analyser %d: a malformed request (%s)", self.index, exc)
        self.kill()

    def answer(self, request: dict) -> dict:
        if time.time() > float(request.get("deadline", 0)):
            return {"error": "expired"}
        latest = self.redis.get(wire.latest_key(str(request.get("client", "")), str(request.get("editor", "")),
                                                str(request.get("op", ""))))
        if latest is not None and int(latest) > int(request.get("seq", 0)):
            return {"superseded": True}
        started = time.monotonic()
        answer = self.ask({k: request.get(k) for k in ("op", "code", "line", "column", "label")})
        answer["analysed_ms"] = round((time.monotonic() - started) * 1000, 1)
        return answer


class Service:
    def __init__(self, redis_url: str, processes: int = PROCESSES, *, runtime: str = wire.DEFAULT_RUNTIME,
                 python: str = sys.executable):
        """``runtime``: the runtime whose list it answers; ``python``: that runtime's interpreter,
        so that the answers are for its libraries."""
        self.redis = redis.Redis.from_url(redis_url)
        self.stopping = threading.Event()
        self.runtime = runtime
        self.analysers = [Analyser(self.redis, i, self.stopping, runtime=runtime, python=python)
                          for i in range(processes)]

    def start(self) -> Service:
        for analyser in self.analysers:
            analyser.thread.start()
        threading.Thread(target=self.beat, name="analyser-alive", daemon=True).start()
        return self

    def beat(self) -> None:
        """The alive key, every second while any process is ready (busy ones included: a long
        request is not an absence; one still warming up is not ready)."""
        while not self.stopping.is_set():
            try:
                if any(a.ready for a in self.analysers):
                    self.redis.set(wire.alive_key(self.runtime), 1, ex=wire.ALIVE_TTL_S)
            except redis.RedisError:
                pass
            self.stopping.wait(1)

    def stop(self) -> None:
        self.stopping.set()
        for analyser in self.analysers:
            analyser.thread.join(5)
            analyser.kill()
