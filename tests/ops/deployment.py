"""The files of deploy/ made into a running site on this machine, as an operator's host would run
them, on loopback and in a temporary folder: the systemd units' command lines and environment
files, nginx's site, Redis's configuration, PostgreSQL's roles. Only what a unit names outside
the checkout is moved (/opt/jax-playground, /etc/..., /var/lib/..., the certificates, the ports).

    nginx (TLS, :random) ──▶ playground-web@A, playground-web@B ──▶ PostgreSQL (roles.sql) or SQLite
                                        │                    ▲
                         Redis (TLS + password) ◀── recorder, executor
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.stack import ROOT, free_port

DEPLOY = ROOT / "deploy"
UNITS = DEPLOY / "systemd"
INSTALL = "/opt/jax-playground"


# -- systemd units -----------------------------------------------------------------------------


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values in order]}} (keys may repeat, as Environment=)."""
    unit: dict[str, dict[str, list[str]]] = {}
    section = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = unit.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        section.setdefault(key.strip(), []).append(value.strip())
    return unit


def read_env_file(path: Path) -> dict[str, str]:
    """An EnvironmentFile= as systemd reads it: KEY=value lines, comments, optional quotes."""
    env = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def specifiers(text: str, instance: str = "") -> str:
    """systemd's %-specifiers a unit here uses: %i (the instance), %H (the host), %% (a %)."""
    return re.sub(r"%([%iH])", lambda m: {"%": "%", "i": instance, "H": socket.gethostname()}[m.group(1)], text)


def unit_command(unit_file: str, env: dict[str, str], moved: dict[str, str],
                 instance: str = "") -> tuple[list[str], dict]:
    """The command line and environment a unit starts its process with, here: the unit's
    ExecStart and Environment= after its EnvironmentFile, ${VAR} from that environment, paths
    outside the checkout moved (``moved``: {path in the unit: path here})."""
    service = read_unit(UNITS / unit_file)["Service"]

    def move(text: str) -> str:
        for there, here in moved.items():
            text = text.replace(there, here)
        return text

    full = {"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
            **env}
    for assignment in service.get("Environment", []):
        key, _, value = specifiers(assignment, instance).partition("=")
        full[key] = move(value)
    (command,) = service["ExecStart"]
    command = re.sub(r"\$\{(\w+)\}", lambda m: full[m.group(1)], specifiers(command, instance))
    argv = shlex.split(move(command))
    assert service["WorkingDirectory"] == [INSTALL]
    return argv, full


# -- certificates ------------------------------------------------------------------------------


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA of the test's own and a certificate it signed for localhost and 127.0.0.1."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in ("ca.crt", "ca.key", "server.crt", "server.key")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=playground test CA",
            "-keyout", str(paths["ca.key"]), "-out", str(paths["ca.crt"]))
    openssl("req", *ec, "-subj", "/CN=localhost", "-keyout", str(paths["server.key"]),
            "-out", str(folder / "server.csr"))
    extensions = folder / "server.ext"
    extensions.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                          "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(folder / "server.csr"), "-CA", str(paths["ca.crt"]), "-CAkey",
            str(paths["ca.key"]), "-CAcreateserial", "-days", "2", "-extfile", str(extensions),
            "-out", str(paths["server.crt"]))
    for key in ("ca.key", "server.key"):
        paths[key].chmod(0o600)
    return paths


# -- nginx -------------------------------------------------------------------------------------


def render_nginx_site(certs: dict[str, Path], *, https_port: int, http_port: int, web_ports: list[int],
                      rate: str | None = None, burst: int | None = None) -> str:
    """deploy/nginx/jax-playground.conf on this machine's ports and certificates."""
    site = (DEPLOY / "nginx" / "jax-playground.conf").read_text()
    site = site.replace("/etc/ssl/jax-playground/fullchain.pem", str(certs["server.crt"]))
    site = site.replace("/etc/ssl/jax-playground/privkey.pem", str(certs["server.key"]))
    site = site.replace("server_name playground.example.org;", "server_name localhost;")
    site = re.sub(r"^\s*listen \[::\]:\d+.*\n", "", site, flags=re.MULTILINE)
    site = site.replace("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{http_port};")
    upstreams = re.findall(r"server 127\.0\.0\.1:(\d+)", site)
    assert upstreams == ["8001", "8002"], upstreams
    for shipped, port in zip(upstreams, web_ports, strict=True):
        site = site.replace(f"server 127.0.0.1:{shipped} ", f"server 127.0.0.1:{port} ")
    if rate:
        site = re.sub(r"rate=\d+r/s", f"rate={rate}", site)
    if burst is not None:
        site = re.sub(r"burst=\d+", f"burst={burst}", site)
    return site


def nginx_main_conf(folder: Path, site: str) -> Path:
    """An nginx.conf of the test's own around the site: pid, logs and temporary files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "site.conf").write_text(site)
    temps = "\n".join(f"    {kind}_temp_path {folder / kind};" for kind in
                      ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = folder / "nginx.conf"
    conf.write_text(f"""user root;
worker_processes 1;
daemon off;
pid {folder / 'nginx.pid'};
error_log {folder / 'error.log'} warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    access_log {folder / 'access.log'};
{temps}
    include {folder / 'site.conf'};
}}
""")
    return conf


def nginx_test(conf: Path) -> subprocess.CompletedProcess:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(nginx).exists(), "nginx is needed for the deployment's tests (apt-get install nginx)"
    return subprocess.run([nginx, "-t", "-c", str(conf), "-e", str(conf.parent / "error.log")],
                          capture_output=True, text=True, timeout=30)


# -- Redis -------------------------------------------------------------------------------------


def render_redis_conf(certs: dict[str, Path], *, port: int, password: str, folder: Path) -> str:
    conf = (DEPLOY / "redis" / "jax-playground.conf").read_text()
    replacements = {
        "tls-port": str(port), "bind": "127.0.0.1", "requirepass": password,
        "tls-cert-file": str(certs["server.crt"]), "tls-key-file": str(certs["server.key"]),
        "tls-ca-cert-file": str(certs["ca.crt"]),
    }
    lines = []
    for line in conf.splitlines():
        key = line.split(" ", 1)[0]
        lines.append(f"{key} {replacements[key]}" if key in replacements and not line.startswith("#") else line)
    lines += [f"dir {folder}", f"logfile {folder / 'redis.log'}", "daemonize no"]
    return "\n".join(lines) + "\n"


# -- PostgreSQL --------------------------------------------------------------------------------


def postgres_server() -> str:
    """The PostgreSQL server the suite uses (its DATABASE_URL), or this machine's, as its
    maintenance database: the suite's own may not exist (pytest-django makes test_<name>)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return "postgres://postgres@127.0.0.1:5432/postgres"
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, ""))


def postgres_reachable(url: str) -> bool:
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
        return True
    except psycopg.OperationalError:
        return False


def as_role(url: str, role: str, password: str, database: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{role}:{password}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, f"/{database}", "", ""))


class Roles:
    """deploy/postgresql/roles.sql run on the suite's server, under names of the test's own."""

    def __init__(self, server: str):
        suffix = uuid.uuid4().hex[:10]
        self.server = server
        self.db, self.owner, self.app = f"playground_{suffix}", f"owner_{suffix}", f"app_{suffix}"
        self.owner_password, self.app_password = uuid.uuid4().hex, uuid.uuid4().hex

    def create(self) -> None:
        subprocess.run(["psql", "-q", "-d", self.server, "-v", f"db={self.db}", "-v", f"owner={self.owner}",
                        "-v", f"app={self.app}", "-v", f"owner_password={self.owner_password}",
                        "-v", f"app_password={self.app_password}", "-f", str(DEPLOY / "postgresql" / "roles.sql")],
                       check=True, capture_output=True, timeout=60)

    @property
    def owner_url(self) -> str:
        return as_role(self.server, self.owner, self.owner_password, self.db)

    @property
    def app_url(self) -> str:
        return as_role(self.server, self.app, self.app_password, self.db)

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{self.app}"')
            conn.execute(f'DROP ROLE IF EXISTS "{self.owner}"')


# -- processes ---------------------------------------------------------------------------------


class Processes:
    """Started processes by name, each logging to a file, each in a session of its own."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "ab")
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def stop(self, name: str, timeout: float = 30) -> int:
        proc = self.procs.pop(name)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(10)
        return proc.returncode

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)


def wait_for_port(port: int, timeout: float = 60, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the process for port {port} exited ({proc.returncode})") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def venv_bin() -> str:
    return str(Path(sys.executable).parent)


__all__ = ["free_port"]
