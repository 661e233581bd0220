"""Start the playground's processes (daphne, a recorder with the watchdog's beat, CPU executors)
as subprocesses and talk to them over the public API. Used by the test suite and the benchmarks.

    Stack
      ├─ python -m web.server web.asgi (daphne)           (HTTP + websockets)
      ├─ celery -A web worker -Q record -B                (recorder + watchdog)
      └─ celery -A executor.worker worker -Q exec.cpu     (one or more executors)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from executor import registry

ROOT = Path(__file__).resolve().parent.parent


def _die_with_parent() -> None:
    """In the child before exec: a stack whose test or benchmark process is killed (a timeout,
    Ctrl+C) must not live on, consuming tasks from the queues of the next one."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server of one's own, on a free port, that can be restarted (it keeps nothing)."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import shutil

        import redis

        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError("redis-server is needed (apt-get install redis-server)")
        self.proc = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), "--maxclients", "20000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def clients(self) -> int:
        import redis

        return redis.Redis.from_url(self.url).info("clients")["connected_clients"]


@dataclass
class Watched:
    """What a websocket delivered: events (parts joined), when each arrived, and how it closed."""

    events: list[dict] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)
    messages: int = 0
    bytes: int = 0
    largest: int = 0
    close_code: int | None = None
    close_reason: str = ""

    def text(self, kind: str = "stdout") -> str:
        return "".join(e["text"] for e in self.events if e["type"] == kind)

    @property
    def finished(self) -> dict | None:
        return self.events[-1] if self.events and self.events[-1]["type"] == "finished" else None


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
            start_new_session=True, preexec_fn=_die_with_parent,
        )
        self.procs[name] = proc
        return proc

    def start_executor(self, name: str = "executor", device: str | None = None, **extra_env) -> subprocess.Popen:
        """An executor worker. ``device``: what it serves, a kind (``cpu``) or a kind and a
        specific name it poses as (``gpu:test``: EXECUTOR_DEVICE_KIND); it consumes the kind's
        queue, and adds its specific kind's itself."""
        if device is not None:
            extra_env.setdefault("EXECUTOR_DEVICE_KIND" if ":" in device else "EXECUTOR_KIND", device)
        configured = str(extra_env.get("EXECUTOR_DEVICE_KIND") or "")
        kind = configured.partition(":")[0] if ":" in configured else str(extra_env.get("EXECUTOR_KIND") or "cpu")
        slots = str(extra_env.get("EXECUTOR_CONCURRENCY", self.env.get("EXECUTOR_CONCURRENCY", "2")))
        # A worker of another runtime (EXECUTOR_RUNTIME) consumes that runtime's queue.
        queue = registry.queue_name(registry.route(kind, str(extra_env.get("EXECUTOR_RUNTIME") or "") or None))
        return self.start(name, [
            sys.executable, "-m", "celery", "-A", "executor.worker", "worker", "-Q", queue,
            "-P", "threads", "-c", slots, "-n", f"{kind}-{name}@%h", "--without-gossip", "--without-mingle",
            "-l", "info",
        ], {k: str(v) for k, v in extra_env.items()})

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def restart_web(self) -> None:
        """Stop daphne and start it again on the same port."""
        self.kill("web", signal.SIGTERM)
        self.start_web(self.port)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/api/devices")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def start_web(self, port: int) -> None:
        # daphne with the request body limit (web.server). A listen backlog of 1024 as scripts/dev
        # has: Twisted's default of 50 resets connections when a class submits at the same moment.
        self.start("web", [sys.executable, "-m", "web.server", "-e",
                           f"tcp:port={port}:interface=127.0.0.1:backlog=1024", "web.asgi:application"])

    def start_recorder(self) -> None:
        self.start("recorder", [
            sys.executable, "-m", "celery", "-A", "web", "worker", "-Q", "record", "-B",
            "-s", str(self.logdir / "beat-schedule"), "-P", "threads", "-c", "4", "-n", "recorder@%h",
            "--without-gossip", "--without-mingle", "-l", "info",
        ])

    @classmethod
    def launch(cls, env: dict, logdir: Path) -> Stack:
        """Start web, recorder and one executor; return once the executor is online."""
        port = free_port()
        stack = cls(url=f"http://127.0.0.1:{port}", env=env, logdir=logdir)
        try:
            stack.start_web(port)
            stack.start_recorder()
            stack.start_executor()
            stack.wait_online()
        except BaseException:
            stack.stop()
            raise
        return stack

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM if name != "executor" else signal.SIGKILL)

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def fetch(self, path: str) -> tuple[int, dict]:
        """GET, with the status of an error answer rather than an exception."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def fetch_text(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.read().decode()

    def post(self, path: str, body) -> tuple[int, dict]:
        status, answer, _ = self.post_as(None, path, body)
        return status, answer

    def post_as(self, client: str | None, path: str, body, timeout: float = 10) -> tuple[int, dict, dict]:
        """POST JSON as a script does (no Origin), from ``client``'s address when given (through
        X-Forwarded-For: the stack must trust one proxy): status, answer and headers, errors too."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **({"X-Forwarded-For": client} if client else {})}
        req = urllib.request.Request(self.url + path, data=data, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.load(r), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e), dict(e.headers)

    def call(self, method: str, path: str, body=None, client: str | None = None,
             timeout: float = 10) -> tuple[int, dict]:
        """Any method, as a script does (no Origin), from ``client``'s address when given (as
        post_as): the status and the JSON answer (an empty one for no body), errors too."""
        data = None if body is None else json.dumps(body).encode()
        headers = {**({"Content-Type": "application/json"} if data is not None else {}),
                   **({"X-Forwarded-For": client} if client else {})}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else {}

    def profile(self, path: str, gzip: bool = True, encoding: str | None = None,
                method: str = "GET") -> tuple[int, dict, bytes]:
        """GET a run's trace (its ``profile`` event's URL) as a script does: the status, the
        headers and the body as sent (gzip-encoded when ``gzip``, or as ``encoding`` asks: the
        caller inflates it)."""
        encoding = encoding or ("gzip" if gzip else None)
        headers = {"Accept-Encoding": encoding} if encoding else {}
        req = urllib.request.Request(self.url + path, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def new_session(self, client: str | None = None, **body) -> dict:
        """A notebook session (``POST /api/sessions``), from ``client``'s address when given."""
        status, session = self.call("POST", "/api/sessions", body, client=client)
        if status != 201:
            raise RuntimeError(f"POST /api/sessions: {status} {session}")
        return session

    def run_cell(self, session: dict, code: str, client: str | None = None,
                 timeout: float = 90) -> tuple[dict, Watched]:
        """A cell of ``session``, followed over its run's websocket to the server's close: the
        POST's answer and what the socket delivered."""
        status, run = self.call("POST", f"{session['url']}/cells", {"code": code}, client=client, timeout=30)
        if status != 201:
            raise RuntimeError(f"POST {session['url']}/cells: {status} {run}")
        return run, self.watch(run["id"], client=client, timeout=timeout)

    @contextmanager
    def session_socket(self, session: dict, client: str | None = None) -> Iterator[SessionSocket]:
        """The session's websocket (``/ws/sessions/<id>/``), as a script opens it (no ``Origin``),
        from ``client``'s address when given: cells are sent on it and their events read back."""
        from websockets.sync.client import connect

        with connect(f"{self.ws_url}{session['ws']}", additional_headers=_headers(None, client),
                     max_size=1024**2, open_timeout=10) as ws:
            yield SessionSocket(ws)

    def page_cookie(self, client: str | None = None) -> str:
        """The cookies a browser is given with the page (``GET /``), its identity among them, as a
        ``Cookie`` header sends them back; from ``client``'s address when given (as post_as)."""
        from http.cookies import SimpleCookie

        req = urllib.request.Request(self.url + "/", headers=_headers(None, client) or {})
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            cookies = SimpleCookie()
            for header in r.headers.get_all("Set-Cookie") or ():
                cookies.load(header)
        return "; ".join(f"{morsel.key}={morsel.value}" for morsel in cookies.values())

    def watch(self, run_id: str, *, after: int = 0, origin: str | None = None, timeout: float = 90,
              max_size: int = 1024**2, client: str | None = None, cookie: str | None = None) -> Watched:
        """Follow a run over a real websocket to daphne, as a script does (no ``Origin`` unless
        given), until the server closes it, from ``client``'s address when given (as post_as),
        with ``cookie`` (``page_cookie``) when given. Parts of large events are joined. Raises
        when a message is over ``max_size`` (daphne's own limit is 1 MiB)."""
        from websockets.sync.client import connect

        deadline = time.monotonic() + timeout
        with connect(f"{self.ws_url}/ws/runs/{run_id}/?after={after}",
                     additional_headers=_headers(origin, client, cookie), max_size=max_size, open_timeout=10) as ws:
            return follow_run(ws, deadline)

    def start_on_socket(self, payload: dict, *, origin: str | None = None, client: str | None = None,
                        cookie: str | None = None, timeout: float = 90,
                        max_size: int = 1024**2) -> tuple[dict, Watched | None]:
        """Start a run on ``/ws/runs/new/`` as the page does (``{"op": "start", ...payload}``) and
        follow it there: the server's first answer (``started_run`` or ``refused``) and, once
        started, the run's events to the server's close (None when refused)."""
        from websockets.sync.client import connect

        deadline = time.monotonic() + timeout
        with connect(f"{self.ws_url}/ws/runs/new/", additional_headers=_headers(origin, client, cookie),
                     max_size=max_size, open_timeout=10) as ws:
            ws.send(json.dumps({"op": "start", **payload}))
            reply = json.loads(ws.recv(timeout=timeout))
            if reply.get("type") != "started_run":
                return reply, None
            return reply, follow_run(ws, deadline)

    def wait_online(self, kind: str = "cpu", timeout: float = 90, warm: bool = True) -> dict:
        """Until an executor of ``kind`` is online (and, with ``warm``, has a warm runner). A
        specific kind (``gpu:test``) waits for its kind to list it (``warm`` then looks at its kind)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                devices = {d["kind"]: d for d in self.get("/api/devices")["devices"]}
                listed = devices[kind.partition(":")[0]]
                if ":" in kind:
                    specific = [s for s in listed.get("specific", ()) if s["device"] == kind]
                    if specific and (listed["warm_runners"] or not warm):
                        return specific[0]
                elif listed["online"] and (listed["warm_runners"] or not warm):
                    return listed
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"no {kind} executor online after {timeout} s; logs in {self.logdir}")

    def wait_runtime(self, runtime: str, kind: str = "cpu", timeout: float = 120) -> dict:
        """Until ``GET /api/runtimes`` says a worker of ``kind`` serves ``runtime``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                listed = {r["id"]: r for r in self.get("/api/runtimes")["runtimes"]}
                if kind in listed[runtime]["kinds"]:
                    return listed[runtime]
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"no {kind} executor of runtime {runtime} online after {timeout} s; logs in {self.logdir}")

    def wait_finished(self, run_id: str, timeout: float = 60) -> dict:
        """The run once it has ended and every event up to its end is recorded: the recorder
        stores a run's batches in whichever order its processes commit them, so an ended run
        may for a moment lack the batch before its end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.get(f"/api/runs/{run_id}")
            if recorded_to_the_end(run):
                return run
            time.sleep(0.1)
        raise TimeoutError(f"run {run_id} still {run['status']} (or its events not all recorded) after {timeout} s")


def recorded_to_the_end(run: dict) -> bool:
    """A run (as GET /api/runs/<id> answers it) has ended and its events are all stored: the first
    page is 1, 2, ... with nothing missing, and when it is the last page (events_next null) its
    last event is the end."""
    events = run.get("events") or []
    if run.get("status") in ("queued", "running", None) or [e["seq"] for e in events] != list(
            range(1, len(events) + 1)):
        return False
    return run.get("events_next") is not None or bool(events and events[-1]["type"] == "finished")


@contextmanager
def own_stack(name: str, redis_url: str | None = None, **extra_env) -> Iterator[Stack]:
    """A benchmark's own stack, stopped on leaving: SQLite in a temporary folder, Redis database
    14 emptied first (or ``redis_url``, left as it is), no rate limits, logs in
    var/bench-logs/<name>; ``extra_env`` adds to or overrides the settings."""
    import secrets
    import tempfile

    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        env = {
            "PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "web.settings",
            "DATABASE_URL": f"sqlite:///{Path(tmp) / 'bench.sqlite3'}",
            "REDIS_URL": redis_url or os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"),
            # DEBUG stays off, as in production, which then needs a secret key.
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "RUN_RATE_LIMIT_PER_MINUTE": "0", "SNIPPET_RATE_LIMIT_PER_HOUR": "0",
            # Benchmarks measure the machine, not the fair shares (bench.fairness turns them on).
            "RUN_MAX_ACTIVE_PER_CLIENT": "0", "RUN_BUDGET_S_PER_HOUR": "0", "RUN_BUDGET_S_PER_DAY": "0",
            "RUN_QUEUE_MAX": "0",
            # One client address stands in for a class: its sockets are not capped at 32.
            "WS_MAX_PER_CLIENT": "1000", "WS_MAX_NEW_PER_CLIENT": "1000", "PYTHONUNBUFFERED": "1",
            # The editor's analysers only where a benchmark measures them (bench.analyse).
            "ANALYSER_PROCESSES": "0",
            "EXECUTOR_SANDBOX": os.environ.get("EXECUTOR_SANDBOX", "fork"),
            # A compile cache of its own, empty: nothing compiled by an earlier benchmark is loaded.
            "EXECUTOR_COMPILE_CACHE_DIR": str(Path(tmp) / "compile-cache"),
            "EXECUTOR_ALLOW_UNSANDBOXED": os.environ.get("EXECUTOR_ALLOW_UNSANDBOXED", "0"),
            **{k: str(v) for k, v in extra_env.items()},
        }
        if redis_url is None and "BENCH_REDIS_URL" not in os.environ:
            import redis

            # Database 14 is the benchmarks' own: tasks a benchmark that was stopped left queued
            # would otherwise run first in the next one (and be timed with it).
            redis.Redis.from_url(env["REDIS_URL"]).flushdb()
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        logdir = ROOT / "var" / "bench-logs" / name
        logdir.mkdir(parents=True, exist_ok=True)
        stack = Stack.launch(env, logdir)
        try:
            yield stack
        finally:
            stack.stop()


class SessionSocket:
    """A session's websocket: its ``state`` messages kept aside (``states``), cells run on it."""

    def __init__(self, ws):
        self.ws = ws
        self.states: list[dict] = []

    def send(self, message: dict | str) -> None:
        self.ws.send(message if isinstance(message, str) else json.dumps(message))

    def next(self, timeout: float = 30) -> dict:
        """The next message that is not a state."""
        from websockets.exceptions import ConnectionClosed

        deadline = time.monotonic() + timeout
        while True:
            try:
                data = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.001)))
            except ConnectionClosed as exc:  # said with the session's last state, which says why
                raise AssertionError(f"the session's socket closed ({exc}); its last state: "
                                     f"{self.states[-1] if self.states else None}") from exc
            if data.get("type") != "state":
                return data
            self.states.append(data)

    def cell(self, code: str, options: dict | None = None, timeout: float = 90) -> tuple[dict, Watched | None]:
        """Run a cell on the socket: its ``cell_started`` run (or the ``refused`` answer, with no
        events) and its events to ``finished``, parts joined."""
        self.send({"op": "cell", "code": code, **({"options": options} if options else {})})
        return self.follow(timeout)

    def follow(self, timeout: float = 90) -> tuple[dict, Watched | None]:
        """The answer to a cell just sent, and its events to ``finished``."""
        deadline = time.monotonic() + timeout
        answer = self.next(timeout)
        if answer["type"] != "cell_started":
            return answer, None
        run_id = answer["run"]["id"]
        watched, parts = Watched(), []
        while watched.finished is None:
            data = self.next(max(deadline - time.monotonic(), 0.001))
            if data["type"] != "cell_event" or data["run"] != run_id:
                raise AssertionError(f"a message of another kind amid cell {run_id}'s events: {data}")
            watched.messages += 1
            event = whole(data["event"], parts)
            if event is None:
                continue
            watched.events.append(event)
            watched.arrived.append(time.monotonic())
        return answer, watched


def _headers(origin: str | None, client: str | None, cookie: str | None = None) -> dict | None:
    return {**({"Origin": origin} if origin else {}), **({"X-Forwarded-For": client} if client else {}),
            **({"Cookie": cookie} if cookie else {})} or None


def whole(event: dict, parts: list[str]) -> dict | None:
    """An event as it was sent: a part of a large one is kept in ``parts`` until its last comes
    (None until then), then the event they make."""
    if event.get("type") != "part":
        return event
    parts.append(event["data"])
    if event["part"] < event["parts"]:
        return None
    joined = json.loads("".join(parts))
    parts.clear()
    return joined


def follow_run(ws, deadline: float) -> Watched:
    """A run's events on an open socket until the server closes it; parts of large events joined."""
    from websockets.exceptions import ConnectionClosed

    watched = Watched()
    parts: list[str] = []
    try:
        while True:
            message = ws.recv(timeout=max(deadline - time.monotonic(), 0.001))
            watched.messages += 1
            watched.bytes += len(message.encode())
            watched.largest = max(watched.largest, len(message.encode()))
            data = whole(json.loads(message), parts)
            if data is None:
                continue
            watched.events.append(data)
            watched.arrived.append(time.monotonic())
    except ConnectionClosed as closed:
        watched.close_code = closed.rcvd.code if closed.rcvd else None
        watched.close_reason = closed.rcvd.reason if closed.rcvd else ""
    return watched
