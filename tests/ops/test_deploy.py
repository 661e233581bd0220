"""deploy/ as an operator uses it, tested as the README's "Deploy" section documents it.

The files themselves: the systemd units pass ``systemd-analyze verify``, nginx's site passes
``nginx -t``, nginx's body limit is the web processes', the KEDA ScaledObject counts every list of
its queue, and the plain fleet's scaler asks for the nodes the work needs.

Then the whole site from them (tests/ops/deployment.py): nginx over TLS in front of two web
processes started with playground-web@.service's command line and playground.env.example's
settings (TRUSTED_PROXIES=1), the recorder and an executor from theirs, Redis from its
configuration (TLS and a password; every process's REDIS_URL is rediss://), PostgreSQL through
roles.sql's two roles (SQLite where no server answers). A run posted over https is followed over
wss to its end; the application counts the address nginx saw, not the one a client claims; pages
of the site open sockets and another scheme's do not; static files come compressed and cached;
an oversized body is refused by nginx; nginx's own rate limit counts per address; a web process
restarting is not seen; /metrics answers only its allow list; plain http goes to https."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.stack import ROOT, free_port
from executor import registry
from tests.conftest import sandbox_backend
from tests.ops import deployment as dep

# -- the files ---------------------------------------------------------------------------------


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is needed (apt-get install systemd)"
    # Installed as the README says: the checkout at /opt/jax-playground; here, this checkout.
    for unit in dep.UNITS.iterdir():
        (tmp_path / unit.name).write_text(unit.read_text().replace(f"{dep.INSTALL}/.venv/bin/", f"{dep.venv_bin()}/"))
    names = ["playground-web@8001.service", "playground-web@8002.service", "playground-recorder.service",
             "playground-executor.service", "playground.target"]
    done = subprocess.run([analyze, "verify", *names], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and not said, said


def test_the_units_start_what_the_readme_says(tmp_path):
    """Celery's %h survives systemd's own specifiers; each unit reads its environment file; the
    executor drains on stop (KillMode=mixed, a timeout longer than a run) in a delegated cgroup."""
    env = {"EXECUTOR_CONCURRENCY": "2", "EXECUTOR_KIND": "cpu"}
    web, _ = dep.unit_command("playground-web@.service", {}, {}, instance="8001")
    assert web[-5:] == ["-m", "web.server", "-e", "tcp:port=8001:interface=127.0.0.1:backlog=1024",
                        "web.asgi:application"]
    recorder, _ = dep.unit_command("playground-recorder.service", {}, {})
    executor, _ = dep.unit_command("playground-executor.service", env, {})
    assert recorder[recorder.index("-n") + 1] == "recorder@%h"
    assert executor[executor.index("-n") + 1] == "cpu@%h" and executor[executor.index("-c") + 1] == "2"
    assert "-Q" not in executor  # the worker consumes its own kind's and runtime's queue
    service = dep.read_unit(dep.UNITS / "playground-executor.service")["Service"]
    assert service["KillMode"] == ["mixed"] and service["Delegate"] == ["yes"]
    assert int(service["TimeoutStopSec"][0]) > 120
    assert service["EnvironmentFile"] == ["/etc/jax-playground/executor.env"]
    for unit in ("playground-web@.service", "playground-recorder.service"):
        assert dep.read_unit(dep.UNITS / unit)["Service"]["EnvironmentFile"] == ["/etc/jax-playground/playground.env"]
    # An executor node's file holds no secret of the web side's.
    assert not {"SECRET_KEY", "DATABASE_URL"} & set(dep.read_env_file(dep.DEPLOY / "executor.env.example"))


def test_the_nginx_site_passes_nginx_t(tmp_path):
    certs = dep.make_certificates(tmp_path / "tls")
    site = dep.render_nginx_site(certs, https_port=free_port(), http_port=free_port(), web_ports=[8001, 8002])
    done = dep.nginx_test(dep.nginx_main_conf(tmp_path / "nginx", site))
    assert done.returncode == 0, done.stderr


def test_nginx_refuses_bodies_over_the_web_processes_limit_and_no_others(settings):
    site = (dep.DEPLOY / "nginx" / "jax-playground.conf").read_text()
    (size,) = re.findall(r"client_max_body_size (\d+)m;", site)
    assert int(size) * 1024**2 == settings.MAX_REQUEST_BYTES
    assert f'"limit": {settings.MAX_REQUEST_BYTES}' in site
    assert f"#MAX_REQUEST_BYTES={settings.MAX_REQUEST_BYTES}" in (dep.DEPLOY / "playground.env.example").read_text()


def test_the_keda_scaled_object_counts_every_priority_list_of_the_queue():
    import yaml

    *_, scaled = yaml.safe_load_all((dep.DEPLOY / "keda-scaledobject.yaml").read_text())
    triggers = scaled["spec"]["triggers"]
    assert [t["metadata"]["listName"] for t in triggers] == registry.queue_lists("cpu")
    formula = scaled["spec"]["advanced"]["scalingModifiers"]["formula"]
    assert sorted(formula.replace(" ", "").split("+")) == sorted(t["name"] for t in triggers)


def test_the_plain_fleet_asks_for_the_nodes_the_work_needs(redis_client, tmp_path):
    """Runs waiting at every priority step and runs running on the online nodes, two slots a node."""
    nodes = tmp_path / "nodes"
    nodes.write_text("# cpu nodes\nnode-a\nnode-b\nnode-c\nnode-d\n")
    device = f"cpu:fleet{uuid.uuid4().hex[:6]}"
    lists = registry.queue_lists(device)
    try:
        for key, count in zip(lists, (2, 1, 1, 0), strict=True):  # 4 waiting, at three priorities
            for _ in range(count):
                redis_client.lpush(key, b"{}")
        registry.beat(redis_client, "cpu@node-a", "cpu", {"busy": 1, "slots": 2}, device.split(":")[1])

        def plan(*extra: str) -> list[str]:
            done = subprocess.run([sys.executable, str(dep.DEPLOY / "fleet_scale.py"), "--nodes", str(nodes),
                                   "--device", device, "--dry-run", *extra], cwd=ROOT, capture_output=True, text=True,
                                  env={**os.environ, "REDIS_URL": os.environ["TEST_REDIS_URL"]}, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()

        said = plan()
        assert said[0] == f"{device}: 4 waiting, 1 running: 3 of 4 nodes"  # ceil(5 / 2)
        assert said[1:] == [f"node-{n}: systemctl start playground-executor" for n in "abc"] + [
            "node-d: systemctl stop --no-block playground-executor"]
        redis_client.delete(*lists)
        registry.leave(redis_client, "cpu@node-a", "cpu", device.split(":")[1])
        assert plan("--min", "1")[0] == f"{device}: 0 waiting, 0 running: 1 of 4 nodes"
    finally:
        redis_client.delete(*lists)
        registry.leave(redis_client, "cpu@node-a", "cpu", device.split(":")[1])


# -- the site, running -------------------------------------------------------------------------


@dataclass
class Site:
    port: int
    http_port: int
    ca: Path
    processes: dep.Processes
    web: dict[str, tuple[list[str], dict]]
    database: str

    @property
    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def request(self, method: str, path: str, body: bytes | None = None, *, source: str = "127.0.0.1",
                headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
        """A request over https from ``source`` (an address of loopback's 127/8)."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=timeout,
                                           source_address=(source, 0))
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
            answer = conn.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            conn.close()

    def post_run(self, code: str, **kwargs) -> tuple[int, dict]:
        status, _, body = self.request("POST", "/api/runs", json.dumps({"code": code}).encode(), **kwargs)
        return status, json.loads(body)

    def follow(self, ws_path: str, *, source: str = "127.0.0.1", origin: str | None = None) -> list[dict]:
        """A run's events over wss, as a script follows them (no Origin unless given)."""
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import connect

        events = []
        with connect(f"wss://127.0.0.1:{self.port}{ws_path}", ssl=self.context, origin=origin,
                     source_address=(source, 0), open_timeout=20, max_size=2**20) as ws:
            try:
                while True:
                    events.append(json.loads(ws.recv(timeout=60)))
            except ConnectionClosed:
                pass
        return events

    def wait_finished(self, run_id: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            status, _, body = self.request("GET", f"/api/runs/{run_id}")
            run = json.loads(body) if status == 200 else {}
            if run.get("status") not in (None, "queued", "running") and run["events"][-1]["type"] == "finished":
                return run
            assert time.monotonic() < deadline, f"run {run_id}: {status} {run.get('status')}"
            time.sleep(0.5)  # within nginx's rate (the tests' is 10 a second)

    def start_web(self, name: str) -> None:
        argv, env = self.web[name]
        proc = self.processes.start(name, argv, env)
        dep.wait_for_port(int(name.split("@")[1]), proc=proc)


# nginx's rate limit in these tests (the shipped one is 200 a second per address, which no test
# reaches): low enough for one test to reach it, high enough for the others' polling.
TEST_RATE, TEST_BURST = "10r/s", 10


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("deployed")
    processes = dep.Processes(root)
    certs = dep.make_certificates(root / "tls")
    roles = None
    try:
        # Redis: TLS only, with a password, from deploy/redis/jax-playground.conf.
        redis_port, password = free_port(), uuid.uuid4().hex
        (root / "redis").mkdir()
        conf = root / "redis" / "redis.conf"
        conf.write_text(dep.render_redis_conf(certs, port=redis_port, password=password, folder=root / "redis"))
        processes.start("redis", [shutil.which("redis-server") or "redis-server", str(conf)], dict(os.environ))
        redis_url = (f"rediss://:{password}@localhost:{redis_port}/0?ssl_cert_reqs=required"
                     f"&ssl_ca_certs={certs['ca.crt']}")
        _wait_for_redis(redis_url)

        # The database: PostgreSQL's two roles (roles.sql), or SQLite where no server answers.
        server = dep.postgres_server()
        if shutil.which("psql") and dep.postgres_reachable(server):
            roles = dep.Roles(server)
            roles.create()
            owner_url, app_url = roles.owner_url, roles.app_url
        else:
            owner_url = app_url = f"sqlite:///{root / 'site.sqlite3'}"

        settings = {
            **dep.read_env_file(dep.DEPLOY / "playground.env.example"),
            "SECRET_KEY": "deployed-test-" + uuid.uuid4().hex * 2,
            "DATABASE_URL": app_url,
            "REDIS_URL": redis_url,
            "ALLOWED_HOSTS": "localhost,127.0.0.1",
            # Low enough to reach in a test: whose address the application counts shows in it.
            "RUN_RATE_LIMIT_PER_MINUTE": "3",
            # Django redirects what it believes came over http: only X-Forwarded-Proto keeps it from that.
            "SECURE_SSL_REDIRECT": "1",
        }
        moved = {f"{dep.INSTALL}/.venv/bin": dep.venv_bin(), "/var/lib/jax-playground": str(root / "state"),
                 "/run/jax-playground-web": str(root / "run")}
        (root / "state").mkdir()
        (root / "run").mkdir()
        migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT,
                                 env={**os.environ, **settings, "DATABASE_URL": owner_url}, capture_output=True,
                                 text=True, timeout=300)
        assert migrate.returncode == 0, migrate.stderr

        web_ports = [free_port(), free_port()]
        web = {f"web@{port}": dep.unit_command("playground-web@.service", settings, moved, instance=str(port))
               for port in web_ports}
        node = {**dep.read_env_file(dep.DEPLOY / "executor.env.example"), "REDIS_URL": redis_url,
                "EXECUTOR_POOL_SIZE": "1", "ANALYSER_PROCESSES": "0", "EXECUTOR_SANDBOX": sandbox_backend(),
                "EXECUTOR_ALLOW_UNSANDBOXED": "1" if sandbox_backend() == "none" else "0"}
        https_port, http_port = free_port(), free_port()
        nginx_conf = dep.nginx_main_conf(root / "nginx", dep.render_nginx_site(
            certs, https_port=https_port, http_port=http_port, web_ports=web_ports, rate=TEST_RATE, burst=TEST_BURST))

        deployed = Site(port=https_port, http_port=http_port, ca=certs["ca.crt"], processes=processes, web=web,
                        database="postgresql" if roles else "sqlite")
        for name in web:
            deployed.start_web(name)
        processes.start("recorder", *dep.unit_command("playground-recorder.service", settings, moved))
        processes.start("executor", *dep.unit_command("playground-executor.service", node, moved))
        processes.start("nginx", [shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(nginx_conf),
                                  "-e", str(root / "nginx" / "error.log")], dict(os.environ))
        dep.wait_for_port(https_port, proc=processes.procs["nginx"])
        _wait_for_executor(deployed)
        yield deployed
    finally:
        processes.stop_all()
        if roles is not None:
            roles.drop()


def _wait_for_redis(url: str, timeout: float = 20) -> None:
    import redis

    deadline = time.monotonic() + timeout
    while True:
        try:
            redis.Redis.from_url(url).ping()
            return
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "Redis with TLS did not start"
            time.sleep(0.1)


def _wait_for_executor(site: Site, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status, _, body = site.request("GET", "/api/devices")
        if status == 200:
            cpu = next(d for d in json.loads(body)["devices"] if d["kind"] == "cpu")
            if cpu["online"] and cpu["warm_runners"]:
                return
        assert time.monotonic() < deadline, f"no executor online through nginx: {status} {body[:200]!r}"
        time.sleep(0.5)


def test_a_run_posted_over_https_is_followed_over_wss_to_its_end(site):
    status, run = site.post_run("print('through nginx, over TLS')")
    assert status == 201, run
    events = site.follow(run["ws"] + "?after=0")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "queued" and events[-1]["type"] == "finished"
    assert events[-1]["status"] == "succeeded", events[-1]
    assert "".join(e.get("text", "") for e in events if e["type"] == "stdout") == "through nginx, over TLS\n"
    # The recorder (its broker over TLS too) stored it, as the API answers from the database.
    stored = site.wait_finished(run["id"])
    assert stored["status"] == "succeeded" and stored["worker"].startswith("cpu@")


def test_the_application_counts_the_address_nginx_saw(site):
    """Every request reaches daphne from nginx's own address; the application, trusting one proxy,
    counts the client's (RUN_RATE_LIMIT_PER_MINUTE=3 here), and not the one a client claims."""
    if time.time() % 60 > 50:  # the limit's window is the minute: start the four posts in one
        time.sleep(61 - time.time() % 60)
    for _ in range(3):
        status, answer = site.post_run("print(1)", source="127.0.0.2")
        assert status == 201, answer
    status, refused = site.post_run("print(1)", source="127.0.0.2")
    assert status == 429 and refused["limit"] == "rate", refused
    # A client that writes another address in X-Forwarded-For is still itself.
    status, refused = site.post_run("print(1)", source="127.0.0.2", headers={"X-Forwarded-For": "198.51.100.7"})
    assert status == 429 and refused["limit"] == "rate", refused
    # Another client, through the same nginx, has its own.
    status, answer = site.post_run("print(1)", source="127.0.0.3")
    assert status == 201, answer


def test_a_page_of_the_site_opens_its_socket_and_another_schemes_does_not(site):
    """The socket's origin is the site's own only as https, which only X-Forwarded-Proto says."""
    from websockets.exceptions import InvalidStatus

    status, run = site.post_run("print('a page follows me')", source="127.0.0.4")
    assert status == 201, run
    events = site.follow(run["ws"], source="127.0.0.4", origin=f"https://127.0.0.1:{site.port}")
    assert events[-1]["type"] == "finished"
    with pytest.raises(InvalidStatus) as refused:
        site.follow(run["ws"], source="127.0.0.4", origin=f"http://127.0.0.1:{site.port}")
    assert refused.value.response.status_code == 403


def test_static_files_come_compressed_and_cached_for_a_year(site):
    manifest = json.loads((ROOT / "staticfiles" / "staticfiles.json").read_text())["paths"]
    hashed = next(v for k, v in sorted(manifest.items()) if k.endswith(".js") and not k.startswith("admin/"))
    status, headers, body = site.request("GET", f"/static/{hashed}", headers={"Accept-Encoding": "br, gzip"},
                                         source="127.0.0.5")
    assert status == 200 and body
    assert headers["content-encoding"] == "br"
    assert "max-age=315360000" in headers["cache-control"] and "immutable" in headers["cache-control"]
    # Static files are not counted against the rate limit: a page loads many at once.
    answers = [site.request("GET", f"/static/{hashed}", source="127.0.0.5")[0] for _ in range(TEST_BURST + 5)]
    assert set(answers) == {200}


def test_a_body_over_the_limit_is_refused_by_nginx(site, settings):
    limit = settings.MAX_REQUEST_BYTES
    status, headers, body = site.request("POST", "/api/runs", b"x" * (limit + 1), source="127.0.0.6")
    assert status == 413 and headers["content-type"] == "application/json"
    refused = json.loads(body)
    assert refused["limit"] == limit and refused["error"].startswith("the request body is over the limit")
    # At the limit nginx lets it through: this one is the application's to answer (a run).
    padded = json.dumps({"code": "print('padded')"}).encode()
    padded = padded[:-1] + b" " * (limit - len(padded)) + b"}"
    status, _, body = site.request("POST", "/api/runs", padded, source="127.0.0.6")
    assert status == 201, body[:300]


def test_nginx_counts_requests_per_address(site):
    def ask(source: str) -> tuple[int, bytes]:
        status, _, body = site.request("GET", "/healthz", source=source)
        return status, body

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, ["127.0.0.7"] * (TEST_BURST * 4)))
    refused = [json.loads(body) for status, body in answers if status == 429]
    assert refused and all(r["limit"] == "proxy" for r in refused), answers
    assert all(status == 200 for status, _ in answers if status != 429)
    assert ask("127.0.0.8")[0] == 200  # another address is another count


def test_a_web_process_restarting_is_not_seen(site):
    first = next(iter(site.web))
    site.processes.stop(first)
    try:
        for _ in range(6):
            status, _, _ = site.request("GET", "/api/devices", source="127.0.0.9")
            assert status == 200
            time.sleep(0.15)
    finally:
        site.start_web(first)
    status, run = site.post_run("print('after the restart')", source="127.0.0.9")
    assert status == 201 and site.wait_finished(run["id"])["status"] == "succeeded"


def test_metrics_answer_only_from_nginx_allow_list(site):
    assert site.request("GET", "/metrics", source="127.0.0.10")[0] == 403
    assert site.request("GET", "/metrics", source="127.0.0.1")[0] != 403


def test_plain_http_goes_to_https_but_the_health_checks_answer(site):
    conn = http.client.HTTPConnection("127.0.0.1", site.http_port, timeout=10)
    try:
        conn.request("GET", "/api/devices", headers={"Host": "localhost"})
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 301 and answer.getheader("Location") == "https://localhost/api/devices"
        conn.request("GET", "/healthz", headers={"Host": "localhost"})
        answer = conn.getresponse()
        assert answer.status == 200 and json.loads(answer.read()) == {"status": "ok"}
    finally:
        conn.close()

