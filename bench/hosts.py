"""Hosts of one's own on this machine: network namespaces on a bridge, each with its own address,
so that the playground's processes reach each other over a network, as on separate machines.
Used by tests/multihost and bench.multihost. Needs root (CAP_NET_ADMIN), iproute2, nsenter,
openssl, redis-server built with TLS, and nginx.

    root namespace                          jp-<tag>-redis  10.231.X.2   redis-server, TLS only
      nginx 127.0.0.1:<port> ──┐            jp-<tag>-web    10.231.X.3   daphne ×2, recorder
      bridge jp<tag>br         ├─ veth ──── jp-<tag>-n1     10.231.X.11  executor
        10.231.X.1/24 ─────────┘            jp-<tag>-n2 ... 10.231.X.12  executor

Every name made here carries a random tag (``jp-<tag>-…`` namespaces, ``jp<tag>…`` links), and
/run/jp-hosts/<tag> holds the pid of the process that made them: what a killed earlier run left
is removed by ``sweep_leftovers`` (its owner is gone), and nothing else is ever touched.

A process runs on a host through ``nsenter --net``: it enters the host's network namespace only.
(``ip netns exec`` would also remount /sys, hiding /sys/fs/cgroup, where the sandbox puts each run.)
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.stack import ROOT, Stack, _die_with_parent, free_port
from executor.processes import pid_alive

STATE_DIR = Path("/run/jp-hosts")
_NETNS = re.compile(r"^jp-([0-9a-f]{6})-[a-z0-9]+$")
_LINK = re.compile(r"^jp([0-9a-f]{6})(br|h\d+|p\d+)$")
# Private addresses chosen among these, the first /24 that nothing on the machine uses.
SUPERNET = ipaddress.ip_network("10.231.0.0/16")


def missing_tools() -> list[str]:
    """What this machine lacks to make hosts (empty when all is there)."""
    needed = {"ip": "iproute2", "nsenter": "util-linux", "openssl": "openssl", "redis-server": "redis-server",
              "nginx": "nginx", "taskset": "util-linux"}
    return [f"{tool} ({package})" for tool, package in needed.items() if shutil.which(tool) is None]


def can_make_hosts() -> str | None:
    """Why hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces and links need root (CAP_NET_ADMIN)"
    missing = missing_tools()
    return f"missing: {', '.join(missing)}" if missing else None


def ip(*args: str, check: bool = True) -> str:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True).stdout


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the machine has an address in or a route to."""
    used = []
    for line in ip("-o", "-4", "addr").splitlines():
        match = re.search(r"inet (\S+)", line)
        if match:
            used.append(ipaddress.ip_interface(match.group(1)).network)
    for line in ip("-4", "route", "show", "table", "all").splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("local", "broadcast", "unreachable", "blackhole", "prohibit"):
            word = line.split()[1]
        if word == "default":
            continue
        try:
            used.append(ipaddress.ip_network(word, strict=False))
        except ValueError:
            pass
    return used


def choose_subnet() -> ipaddress.IPv4Network:
    """A /24 of SUPERNET that overlaps nothing on the machine (tried in random order)."""
    used = _used_networks()
    candidates = list(SUPERNET.subnets(new_prefix=24))
    random.shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError(f"every /24 of {SUPERNET} is in use on this machine")


def _owner_alive(tag: str) -> bool:
    try:
        pid = int((STATE_DIR / tag).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return pid_alive(pid)


def _kill_namespace_processes(ns: str) -> None:
    """Only processes inside a namespace of ours: what a run started there."""
    for pid in ip("netns", "pids", ns, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def sweep_leftovers() -> list[str]:
    """Remove the namespaces and links of earlier runs whose owner is gone (killed before it could
    clean up). Returns what it removed."""
    removed = []
    namespaces = [line.split()[0] for line in ip("netns", "list", check=False).splitlines() if line.strip()]
    links = re.findall(r"^\d+: ([^:@\s]+)", ip("-o", "link", "show", check=False), flags=re.M)
    tags = {m.group(1) for m in map(_NETNS.match, namespaces) if m} | {m.group(1) for m in map(_LINK.match, links) if m}
    for tag in sorted(tags):
        if _owner_alive(tag):
            continue
        for ns in namespaces:
            if (m := _NETNS.match(ns)) and m.group(1) == tag:
                _kill_namespace_processes(ns)
                ip("netns", "del", ns, check=False)
                removed.append(ns)
        for link in links:
            if (m := _LINK.match(link)) and m.group(1) == tag:
                ip("link", "del", link, check=False)  # a veth's peer goes with it
                removed.append(link)
        (STATE_DIR / tag).unlink(missing_ok=True)
    return removed


@dataclass
class Host:
    """One network namespace on the bridge: its own address, reached through its veth."""

    name: str
    ns: str
    addr: str
    veth: str  # the bridge's end, in the root namespace

    def command(self, argv: list[str], cpu: int | None = None) -> list[str]:
        """``argv`` run on this host (and, with ``cpu``, on that core alone)."""
        pinned = ["taskset", "-c", str(cpu)] if cpu is not None else []
        return [*pinned, "nsenter", f"--net=/run/netns/{self.ns}", "--", *argv]

    def cut(self) -> None:
        """Pull its cable: the bridge's end of its link goes down. The host itself sees only a
        link without carrier; its addresses, routes and open connections stay as they were."""
        ip("link", "set", self.veth, "down")

    def restore(self) -> None:
        ip("link", "set", self.veth, "up")


@dataclass
class Network:
    """A bridge with hosts on it. ``create`` first, ``remove`` always (it is idempotent)."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    subnet: ipaddress.IPv4Network | None = None
    hosts: dict[str, Host] = field(default_factory=dict)
    created: bool = False

    @property
    def bridge(self) -> str:
        return f"jp{self.tag}br"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge."""
        return str(self.subnet.network_address + 1)

    def create(self) -> Network:
        sweep_leftovers()
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        (STATE_DIR / self.tag).write_text(f"{os.getpid()}\n")
        self.created = True
        self.subnet = choose_subnet()
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        return self

    def add_host(self, name: str, number: int) -> Host:
        """Host ``name`` at the subnet's address ``number`` (2 and up)."""
        ns = f"jp-{self.tag}-{name}"
        addr = str(self.subnet.network_address + number)
        veth, peer = f"jp{self.tag}h{number}", f"jp{self.tag}p{number}"
        ip("netns", "add", ns)
        host = self.hosts[name] = Host(name=name, ns=ns, addr=addr, veth=veth)
        ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        ip("link", "set", peer, "netns", ns)
        ip("-n", ns, "link", "set", peer, "name", "eth0")
        ip("-n", ns, "addr", "add", f"{addr}/{self.subnet.prefixlen}", "dev", "eth0")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        return host

    def remove(self) -> None:
        if not self.created:
            return
        for host in self.hosts.values():
            _kill_namespace_processes(host.ns)
            ip("netns", "del", host.ns, check=False)
            ip("link", "del", host.veth, check=False)
        ip("link", "del", self.bridge, check=False)
        (STATE_DIR / self.tag).unlink(missing_ok=True)
        self.created = False


class TlsRedis:
    """A redis-server of one's own on a host: TLS only (``--port 0``), a password, a certificate
    for the host's address signed by a CA made here. Restartable on the same port; with
    ``appendonly`` it keeps its data across a restart, as deploy/redis configures it."""

    def __init__(self, host: Host, workdir: Path, port: int = 6380, appendonly: bool = True):
        self.host = host
        self.workdir = workdir
        self.port = port
        self.appendonly = appendonly
        self.password = secrets.token_hex(16)
        self.ca = workdir / "ca.pem"
        self.proc: subprocess.Popen | None = None
        self._make_certificates()

    def _make_certificates(self) -> None:
        w = self.workdir

        def openssl(*args: str) -> None:
            subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=w)

        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=playground test CA",
                "-keyout", "ca.key", "-out", "ca.pem")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={self.host.addr}",
                "-keyout", "redis.key", "-out", "redis.csr")
        (w / "san.cnf").write_text(f"subjectAltName = IP:{self.host.addr}\n")
        openssl("x509", "-req", "-in", "redis.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.cnf", "-out", "redis.pem")

    @property
    def url(self) -> str:
        """What every process is given: the password, the address, the CA; certificates checked."""
        return (f"rediss://:{self.password}@{self.host.addr}:{self.port}/0"
                f"?ssl_cert_reqs=required&ssl_ca_certs={self.ca}")

    def client(self, **kwargs):
        import redis

        return redis.Redis.from_url(self.url, **kwargs)

    def start(self, timeout: float = 15) -> None:
        import redis

        server = shutil.which("redis-server")
        argv = [server, "--port", "0", "--tls-port", str(self.port), "--bind", self.host.addr,
                "--tls-cert-file", str(self.workdir / "redis.pem"), "--tls-key-file", str(self.workdir / "redis.key"),
                "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "no", "--requirepass", self.password,
                "--save", "", "--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "everysec",
                "--dir", str(self.workdir), "--maxclients", "20000", "--timeout", "0", "--tcp-keepalive", "60",
                "--logfile", str(self.workdir / "redis.log")]
        self.proc = subprocess.Popen(self.host.command(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        client = self.client(socket_connect_timeout=1, socket_timeout=2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start; see {self.workdir / 'redis.log'}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """As an operator's restart stops it: SIGTERM (it writes what it keeps, then exits)."""
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


NGINX_CONF = """\
# The test's nginx: deploy/nginx/jax-playground.conf's proxying, over plain http on loopback.
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 4096; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;

    upstream playground_web {{
{servers}
        keepalive 32;
    }}
    map $http_upgrade $playground_connection {{
        default upgrade;
        ''      '';
    }}
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        client_max_body_size 1m;
        client_body_buffer_size 1m;
        proxy_http_version 1.1;
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header Connection "";
        proxy_next_upstream error timeout;
        proxy_connect_timeout 2s;

        location /ws/ {{
            proxy_pass http://playground_web;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $playground_connection;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            proxy_buffering off;
        }}
        location / {{
            proxy_pass http://playground_web;
        }}
    }}
}}
"""


# A web process that refused a connection is out of nginx's rotation this long (deploy/ has 5 s).
NGINX_FAIL_TIMEOUT_S = 2


def nginx_argv(tmp: Path, port: int, upstreams: list[str]) -> list[str]:
    """nginx in the foreground in front of ``upstreams`` (host:port), listening on 127.0.0.1:``port``."""
    servers = "\n".join(f"        server {u} max_fails=1 fail_timeout={NGINX_FAIL_TIMEOUT_S}s;" for u in upstreams)
    # As root its workers would run as nobody, who cannot write under tmp.
    user = "user root;" if os.geteuid() == 0 else ""
    (tmp / "nginx.conf").write_text(NGINX_CONF.format(tmp=tmp, port=port, servers=servers, user=user))
    return [shutil.which("nginx") or "nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf"),
            "-e", str(tmp / "error.log")]


@dataclass
class Fleet(Stack):
    """A playground spread over hosts: Redis on one, the web processes and the recorder on
    another, each executor node on its own, nginx in front (``url``). A process named in
    ``placement`` runs on that host (and, in ``cores``, pinned to that core)."""

    network: Network | None = None
    redis: TlsRedis | None = None
    placement: dict[str, Host] = field(default_factory=dict)
    cores: dict[str, int] = field(default_factory=dict)
    web_ports: dict[str, int] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], extra_env: dict | None = None) -> subprocess.Popen:
        host = self.placement.get(name)
        if host is not None:
            argv = host.command(argv, self.cores.get(name))
        return super().start(name, argv, extra_env)

    def start_node(self, name: str, cpu: int | None = None, **extra_env) -> subprocess.Popen:
        """An executor on host ``name`` (one slot unless told otherwise)."""
        self.placement[name] = self.network.hosts[name]
        if cpu is not None:
            self.cores[name] = cpu
        extra_env.setdefault("EXECUTOR_CONCURRENCY", "1")
        return self.start_executor(name, **extra_env)

    def start_web_process(self, name: str, port: int) -> None:
        host = self.placement[name] = self.network.hosts["web"]
        self.web_ports[name] = port
        self.start(name, [sys.executable, "-m", "web.server", "-e",
                          f"tcp:port={port}:interface={host.addr}:backlog=1024", "web.asgi:application"])

    def web_url(self, name: str) -> str:
        return f"http://{self.network.hosts['web'].addr}:{self.web_ports[name]}"

    def wait_web(self, name: str, timeout: float = 60) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout
        # The host name the proxy passes on (ALLOWED_HOSTS), not the process's own address.
        request = urllib.request.Request(self.web_url(name) + "/healthz", headers={"Host": "127.0.0.1"})
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5):
                    return
            except OSError:
                if self.procs[name].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not answer; see {self.logdir / (name + '.log')}") from None
                time.sleep(0.1)

    def restart_web_process(self, name: str) -> None:
        """Stop one daphne (SIGTERM, as systemd does) and start it again on the same port."""
        self.kill(name, signal.SIGTERM)
        self.start_web_process(name, self.web_ports[name])
        self.wait_web(name)

    def start_recorder(self) -> None:
        self.placement["recorder"] = self.network.hosts["web"]
        super().start_recorder()

    def stop(self) -> None:
        # Nodes are killed (no drain: the fleet is going away); the rest stop as systemd stops them.
        for name in list(self.procs):
            self.kill(name, signal.SIGKILL if re.fullmatch(r"n\d+", name) else signal.SIGTERM)

    def close(self) -> None:
        """Everything gone: the processes, Redis, then the network and its hosts."""
        try:
            self.stop()
            self.redis.stop()
        finally:
            self.network.remove()

    def node_of(self, run: dict) -> str | None:
        """The node a run started on (from its ``started`` event's worker name: ``cpu-n1@…``)."""
        started = [e for e in run.get("events", ()) if e["type"] == "started"]
        if not started:
            return None
        return started[0]["worker"].split("@")[0].removeprefix("cpu-")


def fleet_env(redis_url: str, database: Path, **extra) -> dict:
    """The environment of every process of a fleet: the TLS Redis, a SQLite database of its own,
    nginx as the one trusted proxy, the real sandbox where this machine has it, no fair shares."""
    sandbox = "fork" if shutil.which("bwrap") else "none"
    return {
        "PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "web.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "REDIS_URL": redis_url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "TRUSTED_PROXIES": "1",
        "RUN_RATE_LIMIT_PER_MINUTE": "0", "SNIPPET_RATE_LIMIT_PER_HOUR": "0",
        "RUN_MAX_ACTIVE_PER_CLIENT": "0", "RUN_BUDGET_S_PER_HOUR": "0", "RUN_BUDGET_S_PER_DAY": "0",
        "RUN_QUEUE_MAX": "0", "WS_MAX_PER_CLIENT": "1000",
        "ANALYSER_PROCESSES": "0", "EXECUTOR_POOL_SIZE": "2",
        "EXECUTOR_SANDBOX": sandbox, "EXECUTOR_ALLOW_UNSANDBOXED": "1" if sandbox == "none" else "0",
        "PYTHONUNBUFFERED": "1",
        **{k: str(v) for k, v in extra.items()},
    }


def launch_fleet(tmp: Path, logdir: Path, nodes: int = 2, web_processes: int = 2,
                 node_cores: dict[str, int] | None = None, **extra_env) -> Fleet:
    """Hosts, the TLS Redis, the database, web processes, the recorder, nginx and ``nodes``
    executors (n1, n2, ...; host n3 is made too, for a node to add later). Returns once every
    node is online. The caller stops the fleet and removes ``fleet.network``."""
    network = Network().create()
    fleet = None
    try:
        redis_host = network.add_host("redis", 2)
        network.add_host("web", 3)
        for i in range(1, max(nodes, 3) + 1):
            network.add_host(f"n{i}", 10 + i)
        (tmp / "redis").mkdir()
        redis = TlsRedis(redis_host, tmp / "redis")
        redis.start()
        env = fleet_env(redis.url, tmp / "fleet.sqlite3", **extra_env)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        port = free_port()
        fleet = Fleet(url=f"http://127.0.0.1:{port}", env=env, logdir=logdir, network=network, redis=redis)
        for i in range(1, web_processes + 1):
            fleet.start_web_process(f"web{i}", 8000 + i)
        (tmp / "nginx").mkdir()
        fleet.start("nginx", nginx_argv(tmp / "nginx", port, [
            f"{network.hosts['web'].addr}:{p}" for p in fleet.web_ports.values()]))
        fleet.start_recorder()
        for i in range(1, nodes + 1):
            fleet.start_node(f"n{i}", cpu=(node_cores or {}).get(f"n{i}"))
        for name in fleet.web_ports:
            fleet.wait_web(name)
        wait_nodes(fleet, nodes)
    except BaseException:
        if fleet is not None:
            fleet.stop()
        if network.created:
            redis_proc = getattr(locals().get("redis"), "proc", None)
            if redis_proc is not None:
                redis_proc.kill()
        network.remove()
        raise
    return fleet


def wait_nodes(fleet: Fleet, count: int, timeout: float = 180) -> dict:
    """Until /api/devices says ``count`` CPU workers are online with a warm runner each."""
    deadline = time.monotonic() + timeout
    listed: dict = {}
    while time.monotonic() < deadline:
        try:
            listed = {d["kind"]: d for d in fleet.get("/api/devices")["devices"]}.get("cpu", {})
            if listed.get("workers", 0) >= count and listed.get("warm_runners", 0) >= count:
                return listed
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{count} nodes not online after {timeout} s ({listed}); logs in {fleet.logdir}")
