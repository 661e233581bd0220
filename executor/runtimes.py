"""The playground's runtimes: which Python environments a run can ask for, read from
``runtimes/runtimes.toml`` and each runtime's lock file; and the one command that builds them.

    python -m executor.runtimes list              what the catalog holds, and which are built here
    python -m executor.runtimes build [ID ...]    build (or bring up to date) the environments
    python -m executor.runtimes lock ID           resolve a runtime's requirements.in again
    python -m executor.runtimes ids [--others]    the ids (--others: not the executor's own)

A runtime's id is stable: never removed, never reused, never repointed. A retired id stays an
alias of its successor (``resolve`` says so). The web side reads the catalog to check a run's
``runtime`` and to answer ``GET /api/runtimes``; the executor reads it to know which environment
its runners use. Standard library only (and uv for building).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "runtimes" / "runtimes.toml"
EXECUTOR_REQUIREMENTS = ROOT / "requirements" / "executor.txt"
# Where `build` puts the environments unless told otherwise (EXECUTOR_RUNTIMES_DIR on a node).
DEFAULT_DIR = ROOT / "var" / "runtimes"
# The runtime every run ran on before there were several: its queue keeps the bare name
# (exec.cpu), so that a queue's name, like a runtime's id, never changes meaning.
FIRST = "jax-0.12.0.1"
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
# What the page lists beside JAX, jaxlib and numpy.
LIBRARIES = ("scipy", "optax", "flax", "equinox", "chex", "einops", "matplotlib", "rich")
STAMP = ".installed"


@dataclasses.dataclass(frozen=True)
class Runtime:
    id: str
    title: str
    python: str
    default: bool
    # "executor": the executor's own environment; else the lock file's path.
    environment: str
    lock: Path | None
    as_of: str | None
    packages: dict[str, str]

    @property
    def jax(self) -> str | None:
        return self.packages.get("jax")

    @property
    def jaxlib(self) -> str | None:
        return self.packages.get("jaxlib")

    @property
    def numpy(self) -> str | None:
        return self.packages.get("numpy")

    @property
    def libraries(self) -> dict[str, str]:
        return {name: self.packages[name] for name in LIBRARIES if name in self.packages}

    @property
    def queue_suffix(self) -> str:
        return "" if self.id == FIRST else f"@{self.id}"

    def describe(self) -> dict:
        """What ``GET /api/runtimes`` says of it (without ``kinds``, which the web side adds)."""
        return {"id": self.id, "title": self.title, "jax": self.jax, "jaxlib": self.jaxlib,
                "numpy": self.numpy, "python": self.python, "default": self.default,
                "libraries": self.libraries}


class UnknownRuntime(KeyError):
    def __init__(self, name: str, known: list[str]):
        super().__init__(name)
        self.name, self.known = name, known

    def __str__(self) -> str:
        shown = repr(self.name) if len(self.name) <= 60 else repr(self.name[:57]) + "…"  # never echo a megabyte
        return f"unknown runtime {shown}: use one of {', '.join(self.known)}"


def pinned(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements or lock file, names normalised (PEP 503)."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return found


@dataclasses.dataclass(frozen=True)
class Catalog:
    runtimes: dict[str, Runtime]
    default: str
    retired: dict[str, str]

    @property
    def ids(self) -> list[str]:
        return list(self.runtimes)

    @property
    def own_ids(self) -> list[str]:
        """The runtimes the project installs itself (all but a host's own interpreter and JAX)."""
        return [rid for rid, rt in self.runtimes.items() if rt.environment != "host"]

    def resolve(self, name: str | None) -> tuple[Runtime, str | None]:
        """The runtime a run naming ``name`` runs on (None: the default), and, for a retired id,
        what to tell the person. Raises UnknownRuntime."""
        if not name:
            return self.runtimes[self.default], None
        if name in self.runtimes:
            return self.runtimes[name], None
        seen = set()
        successor = name
        while successor in self.retired and successor not in seen:
            seen.add(successor)
            successor = self.retired[successor]
        if successor in self.runtimes:
            return (self.runtimes[successor],
                    f"runtime {name} is retired: this ran on its successor, {successor}")
        raise UnknownRuntime(name, self.ids)


def load(path: Path = CATALOG) -> Catalog:
    data = tomllib.loads(path.read_text())
    default = data["default"]
    runtimes = {}
    for rid, entry in data.get("runtimes", {}).items():
        if not ID_PATTERN.fullmatch(rid):
            raise ValueError(f"{path}: runtime id {rid!r} is not lower-case letters, digits, '.', '_', '-'")
        environment = entry.get("environment", "lock")
        lock = path.parent / entry["lock"] if "lock" in entry else None
        if environment == "executor":
            packages = pinned(EXECUTOR_REQUIREMENTS)
        elif environment == "host":
            packages = {}  # whatever the node's interpreter has: read when its worker starts
        elif lock is not None:
            packages = pinned(lock) if lock.exists() else {}
        else:
            raise ValueError(f"{path}: runtime {rid} has neither a lock nor environment = \"executor\" or \"host\"")
        runtimes[rid] = Runtime(id=rid, title=entry.get("title", rid), python=str(entry.get("python", "")),
                                default=rid == default, environment=environment, lock=lock,
                                as_of=entry.get("as_of"), packages=packages)
    if default not in runtimes:
        raise ValueError(f"{path}: the default runtime {default!r} is not among {list(runtimes)}")
    retired = {str(k): str(v) for k, v in data.get("retired", {}).items()}
    reused = set(retired) & set(runtimes)
    if reused:
        raise ValueError(f"{path}: {sorted(reused)} are both retired and offered: an id is never reused")
    return Catalog(runtimes=runtimes, default=default, retired=retired)


@functools.cache
def catalog() -> Catalog:
    return load()


# Runtimes with no environment of their own to build: the executor's, and a host's ("host": the
# interpreter the worker itself runs on, with the libraries its PYTHONPATH names, e.g. an
# accelerator host's preinstalled JAX and libtpu; no lock, no build, its versions read when the
# worker starts).
UNBUILT = ("executor", "host")


def environment(runtime: Runtime, into: Path = DEFAULT_DIR) -> Path:
    """The environment's prefix on this node: the executor's own (a host runtime's too: the
    worker runs on that interpreter), or ``<into>/<id>``."""
    return Path(sys.prefix) if runtime.environment in UNBUILT else Path(into) / runtime.id


def host_pythonpath(runtime: Runtime) -> str:
    """The library folders a host runtime's runners import from: the worker's own PYTHONPATH
    (where the host keeps its JAX), in order; nothing for any other runtime."""
    return os.environ.get("PYTHONPATH", "") if runtime.environment == "host" else ""


def python_of(runtime: Runtime, into: Path = DEFAULT_DIR) -> Path:
    return environment(runtime, into) / "bin" / "python"


def _stamp(runtime: Runtime) -> str:
    assert runtime.lock is not None
    base = f"{sys.base_prefix}|{sys.version_info[:3]}|".encode()
    return hashlib.sha256(base + runtime.lock.read_bytes()).hexdigest()[:16]


def is_built(runtime: Runtime, into: Path = DEFAULT_DIR) -> bool:
    if runtime.environment in UNBUILT:
        return True
    stamp = environment(runtime, into) / STAMP
    return stamp.exists() and stamp.read_text().strip() == _stamp(runtime)


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.prefix) / "bin" / "uv")
    if not os.path.exists(found):
        raise SystemExit("uv is needed to build runtimes: pip install -r requirements/executor.txt")
    return found


def base_python() -> str:
    """The interpreter every runtime's environment is made from: the executor's own base
    installation, which the sandbox binds (a runtime's python links to it)."""
    name = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (Path(sys.base_prefix) / "bin" / name, Path(sys.base_prefix) / "bin" / "python3"):
        if candidate.exists():
            return str(candidate)
    raise SystemExit(f"no {name} under {sys.base_prefix}")


def build(runtime: Runtime, into: Path = DEFAULT_DIR, *, say=print) -> float:
    """Make ``<into>/<id>`` hold exactly the lock's packages (hashes checked). Returns the
    seconds it took; 0 when it was already up to date."""
    if runtime.environment in UNBUILT or is_built(runtime, into):
        return 0.0
    assert runtime.lock is not None
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if runtime.python and runtime.python != here:
        raise SystemExit(f"runtime {runtime.id} is locked for Python {runtime.python}, and this is Python {here}: "
                         f"build it with a Python {runtime.python} executor")
    if not runtime.lock.exists():
        raise SystemExit(f"{runtime.lock} is missing: python -m executor.runtimes lock {runtime.id}")
    start = time.monotonic()
    dest = environment(runtime, into)
    say(f"building runtime {runtime.id} in {dest}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    (dest / STAMP).unlink(missing_ok=True)
    # Never the user's uv configuration or a download of another Python: the base one only.
    env = {**os.environ, "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([_uv(), "venv", "--quiet", "--allow-existing", "--python", base_python(), str(dest)],
                   check=True, env=env)
    subprocess.run([_uv(), "pip", "sync", "--quiet", "--require-hashes", "--python", str(dest / "bin" / "python"),
                    str(runtime.lock)], check=True, env=env)
    # Compiled once here, read-only in the sandbox afterwards.
    subprocess.run([str(dest / "bin" / "python"), "-m", "compileall", "-q", "-j", "0",
                    str(dest / "lib")], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (dest / STAMP).write_text(_stamp(runtime) + "\n")
    took = time.monotonic() - start
    say(f"runtime {runtime.id} built in {took:.0f} s")
    return took


def lock(runtime: Runtime) -> None:
    """Resolve ``requirements.in`` beside the lock as of the runtime's date, with hashes."""
    assert runtime.lock is not None and runtime.as_of
    source = runtime.lock.with_name("requirements.in")
    cutoff = f"{runtime.as_of}T00:00:00Z"
    today = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(time.time() + 86400))
    # The analyser's own packages are the same in every runtime, whatever the runtime's date.
    analyser = [arg for name in ("jedi", "parso") for arg in ("--exclude-newer-package", f"{name}={today}")]
    subprocess.run([_uv(), "pip", "compile", "--quiet", "--no-config", str(source), "--python-version",
                    runtime.python, "--exclude-newer", cutoff, *analyser, "--generate-hashes",
                    "--no-header", "-o", str(runtime.lock)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m executor.runtimes", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="the catalog, and which runtimes are built here")
    building = sub.add_parser("build", help="build the runtimes' environments (all when none is named)")
    locking = sub.add_parser("lock", help="resolve a runtime's requirements.in into its lock file")
    ids = sub.add_parser("ids", help="the runtimes' ids, one a line")
    ids.add_argument("--others", action="store_true", help="all but the executor's own environment")
    for p in (listing, building):
        p.add_argument("--into", type=Path, default=Path(os.environ.get("EXECUTOR_RUNTIMES_DIR") or DEFAULT_DIR))
    building.add_argument("ids", nargs="*")
    locking.add_argument("id")
    args = parser.parse_args(argv)
    cat = catalog()
    if args.command == "ids":
        for rt in cat.runtimes.values():
            if not (args.others and rt.environment in UNBUILT):
                print(rt.id)
        return 0
    if args.command == "list":
        for rt in cat.runtimes.values():
            state = "built" if is_built(rt, args.into) else "not built"
            print(f"{rt.id:16} jax {rt.jax or '?':10} numpy {rt.numpy or '?':8} "
                  f"{'default ' if rt.default else ''}{state}: {environment(rt, args.into)}")
        for old, new in cat.retired.items():
            print(f"{old:16} retired: runs on {new}")
        return 0
    if args.command == "lock":
        lock(cat.resolve(args.id)[0])
        return 0
    try:
        chosen = [cat.resolve(i)[0] for i in args.ids] if args.ids else list(cat.runtimes.values())
    except UnknownRuntime as exc:
        parser.error(str(exc))
    total = sum(build(rt, args.into) for rt in chosen)
    print(f"runtimes ready ({', '.join(rt.id for rt in chosen)}) in {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
