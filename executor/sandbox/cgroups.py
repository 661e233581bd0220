"""Per-run cgroups: the memory cap, the process cap, a CPU share, CPU accounting and the kill
switch.

Each run has a cgroup of its own in the CPU controller too, where it has the default weight like
every sibling: under contention the kernel divides the CPU between runs, not between threads, so a
run that spins up sixteen XLA threads gets no more than a single-threaded neighbour.

Both hierarchies are supported: the unified one (cgroup v2, a current Debian or Ubuntu host:
``/sys/fs/cgroup`` is a cgroup2 mount with ``cgroup.controllers``) and the legacy one (cgroup v1,
one mount per controller under ``/sys/fs/cgroup/<controller>``, as on the development machine).

    <the worker's own cgroup, or a configured parent>      v1: one per controller
      └─ jax-playground/                                   created once (v2: controllers enabled)
           └─ run-<worker pid>-<slot>-<hex>/               one per runner, created before it starts

A runner's cgroup is created by the launcher and joined by the wrapper process (``enter.py``)
*before* it execs bubblewrap, so every process of the sandbox is born inside it: there is no
window in which a fork could escape the limits. The worker pid in the name lets a restarted
worker sweep the empty cgroups a crashed one left behind without touching a live neighbour's.

What a sandboxed process cannot do to its cgroup: cgroupfs is not mounted in the sandbox, and
the sandbox has its own cgroup namespace, so it can neither read nor leave its cgroup.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

from ..processes import pid_alive

CGROUP_ROOT = Path("/sys/fs/cgroup")
BASE_NAME = "jax-playground"
RUN_PREFIX = "run-"
# Measured: rmdir of a run cgroup fails with EBUSY for a few milliseconds after its last
# process was killed (the kernel releases a dying task asynchronously).
REMOVE_TIMEOUT_S = 5.0


class CgroupError(RuntimeError):
    """A cgroup could not be created, configured or removed. The message says how to fix it."""


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, value: str) -> None:
    # One write(2) per value: cgroupfs parses each write as one command.
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file ("key value" lines: memory.events, pids.events, cpu.stat...)."""
    values = {}
    try:
        for line in _read(path).splitlines():
            key, _, value = line.partition(" ")
            try:
                values[key] = int(value)
            except ValueError:
                pass
    except OSError:
        pass
    return values


def _pids(cgroup_dir: Path) -> list[int]:
    try:
        return [int(p) for p in _read(cgroup_dir / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its v2 path."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _v1_mounts() -> dict[str, Path]:
    """Mount point of each v1 controller, from /proc/self/mountinfo."""
    mounts = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, _source, options = right.split(" ")[:3]
        if fstype != "cgroup":
            continue
        mount_point = Path(left.split(" ")[4])
        for option in options.split(","):
            mounts.setdefault(option, mount_point)
    return mounts


def _kill_all(dirs: list[Path], wait: bool = True) -> None:
    """SIGKILL every process in the given cgroups until none is left (``wait``), or once. Used
    where the kernel has no cgroup.kill (v1, v2 before Linux 5.14). A fork between reading
    cgroup.procs and killing is bounded by pids.max and caught by the next round."""
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    while time.monotonic() < deadline:
        pids = {pid for d in dirs for pid in _pids(d)}
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not wait:
            return
        time.sleep(0.01)


def _rmdir(path: Path) -> None:
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise CgroupError(f"cannot remove cgroup {path}: {exc}") from exc
            time.sleep(0.01)


def _make_dir(path: Path) -> None:
    try:
        path.mkdir()
    except FileExistsError:
        pass
    except OSError as exc:
        raise CgroupError(
            f"cannot create cgroup {path}: {exc}. The worker must run as root (or own a "
            "delegated cgroup subtree, e.g. systemd Delegate=yes) for the bwrap backend."
        ) from exc


class RunCgroup:
    """The cgroup(s) of one runner: v2 has one directory, v1 one per controller."""

    def __init__(self, dirs: dict[str, Path], *, v2: bool, memory_bytes: int, pids: int):
        self.dirs = dirs  # controller name ("" on v2) -> directory
        self.v2 = v2
        self.memory_bytes = memory_bytes
        self.pids_max = pids

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its pid into to join this cgroup (all hierarchies)."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def add(self, pid: int) -> None:
        """Move a process in (every hierarchy); what it forks from then on is born here."""
        for procs in self.procs_files:
            _write(Path(procs), str(pid))

    def _dir(self, controller: str) -> Path | None:
        return self.dirs.get("" if self.v2 else controller)

    def pids(self) -> list[int]:
        return sorted({pid for d in self.dirs.values() for pid in _pids(d)})

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer ended a process here (the memory cap was hit and
        nothing could be reclaimed)."""
        d = self._dir("memory")
        if d is None:
            return False
        if self.v2:
            return _keyed(d / "memory.events").get("oom_kill", 0) > 0
        # v1: memory.oom_control has an oom_kill counter since Linux 4.13; before that, the
        # failure counter and the peak are the best evidence.
        control = _keyed(d / "memory.oom_control")
        if "oom_kill" in control:
            return control["oom_kill"] > 0
        failcnt = _keyed_single(d / "memory.failcnt")
        peak = _keyed_single(d / "memory.max_usage_in_bytes")
        return failcnt > 0 and peak >= self.memory_bytes * 0.98

    def pids_limit_hit(self) -> bool:
        """Whether a fork or thread creation failed because pids.max was reached."""
        d = self._dir("pids")
        return d is not None and _keyed(d / "pids.events").get("max", 0) > 0

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process that ran here, warm-up included."""
        if self.v2:
            usec = _keyed(self.dirs[""] / "cpu.stat").get("usage_usec")
            return None if usec is None else usec / 1e6
        d = self.dirs.get("cpuacct")
        if d is None:
            return None
        ns = _keyed_single(d / "cpuacct.usage", default=None)
        return None if ns is None else ns / 1e9

    def peak_memory_bytes(self) -> int | None:
        d = self._dir("memory")
        if d is None:
            return None
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"  # memory.peak: 5.19+
        return _keyed_single(d / name, default=None)

    def yield_cpu(self) -> None:
        """The least CPU weight there is: the kernel shares CPU between cgroups before any
        nice value counts, so a background job at nice 19 would otherwise still take a run's
        share. Where the cpu controller is not delegated, nothing changes."""
        if self.v2:
            _write_optional(self.dirs[""] / "cpu.weight", "1")
        elif "cpu" in self.dirs:
            _write_optional(self.dirs["cpu"] / "cpu.shares", "2")

    def lower_limits(self, *, memory_bytes: int, pids: int) -> None:
        """Lower the caps of a live cgroup (never raise them)."""
        memory_bytes = min(memory_bytes, self.memory_bytes)
        pids = min(pids, self.pids_max)
        if self.v2:
            _write(self.dirs[""] / "memory.max", str(memory_bytes))
            _write(self.dirs[""] / "pids.max", str(pids))
        else:
            memory = self.dirs["memory"]
            # Lowering: the plain limit first, as memsw may never be below it.
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            _write_optional(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            _write(self.dirs["pids"] / "pids.max", str(pids))
        self.memory_bytes, self.pids_max = memory_bytes, pids

    def kill(self, wait: bool = True) -> None:
        """SIGKILL everything inside, and (``wait``) wait until it is gone."""
        dirs = list(self.dirs.values())
        if self.v2:
            try:
                _write(dirs[0] / "cgroup.kill", "1")  # atomic, races no fork (Linux 5.14+)
            except OSError:
                pass  # older kernel, or the cgroup is gone: the loop below does it
        _kill_all(dirs, wait)

    def remove(self) -> None:
        self.kill()
        for d in sorted(set(self.dirs.values())):  # co-mounted v1 controllers share a directory
            _rmdir(d)


def _keyed_single(path: Path, default=0):
    try:
        return int(_read(path).strip())
    except (OSError, ValueError):
        return default


class Cgroups:
    """Creates per-run cgroups under the ``jax-playground`` folder of a parent cgroup.

    ``parent`` is a path relative to the hierarchy root (e.g. "/system.slice/exec.service");
    by default the worker's own cgroup, so the sandboxes stay inside whatever limits the
    service manager gave the worker.
    """

    def __init__(self, parent: str | None = None):
        self.parent = parent
        self.v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        self._bases: dict[str, Path] | None = None

    @property
    def version(self) -> int:
        return 2 if self.v2 else 1

    def bases(self) -> dict[str, Path]:
        """The jax-playground folder per hierarchy, created and prepared on first use."""
        if self._bases is None:
            self._bases = self._prepare_v2() if self.v2 else self._prepare_v1()
        return self._bases

    # -- v2 ---------------------------------------------------------------------------------

    def _prepare_v2(self) -> dict[str, Path]:
        parent = CGROUP_ROOT / (self.parent or _own_cgroups().get("", "/")).lstrip("/")
        available = _read(parent / "cgroup.controllers").split()
        missing = [c for c in ("memory", "pids") if c not in available]
        if missing:
            raise CgroupError(
                f"cgroup {parent} lacks the {' and '.join(missing)} controller(s). Delegate them "
                "to the worker: run it as a systemd service with Delegate=yes (or under "
                "`systemd-run -p Delegate=yes`), or enable them in the parent's "
                "cgroup.subtree_control."
            )
        self._enable_v2(parent)
        base = parent / BASE_NAME
        _make_dir(base)
        self._enable_v2(base)
        return {"": base}

    def _enable_v2(self, cgroup: Path) -> None:
        enabled = _read(cgroup / "cgroup.subtree_control").split()
        available = _read(cgroup / "cgroup.controllers").split()
        # cpu is optional (without it runs share the CPU by thread, not by run).
        wanted = [c for c in ("memory", "pids", "cpu") if c not in enabled and (c != "cpu" or c in available)]
        if not wanted:
            return
        try:
            _write(cgroup / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise CgroupError(f"cannot enable {wanted} in {cgroup}: {exc}") from exc
        # "No internal processes": a non-root v2 cgroup that holds processes cannot hand
        # controllers to children. If the worker is alone in its cgroup (a service of its
        # own), it moves itself into a leaf, as container init systems do; otherwise it would
        # be moving someone else's processes, so it asks for a parent instead.
        others = [p for p in _pids(cgroup) if p != os.getpid()]
        if others:
            raise CgroupError(
                f"cgroup {cgroup} holds other processes ({len(others)}), so it cannot have "
                "child cgroups with controllers. Run the worker as its own systemd service "
                "with Delegate=yes, or set the executor's cgroup parent to an empty delegated "
                "cgroup."
            )
        leaf = cgroup / "worker"
        _make_dir(leaf)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        _write(cgroup / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))

    # -- v1 ---------------------------------------------------------------------------------

    def _prepare_v1(self) -> dict[str, Path]:
        mounts = _v1_mounts()
        own = _own_cgroups()
        missing = [c for c in ("memory", "pids") if c not in mounts]
        if missing:
            raise CgroupError(
                f"no cgroup v1 hierarchy for {' and '.join(missing)} is mounted (and "
                f"{CGROUP_ROOT} is not a cgroup2 mount). Mount them, or boot with the unified "
                "hierarchy (systemd.unified_cgroup_hierarchy=1)."
            )
        bases = {}
        for controller in ("memory", "pids", "cpuacct", "cpu"):
            if controller not in mounts:
                continue  # cpuacct and cpu are optional: CPU accounting or the per-run share is lost
            parent = self.parent if self.parent is not None else own.get(controller, "/")
            base = mounts[controller] / parent.lstrip("/") / BASE_NAME
            _make_dir(base)
            bases[controller] = base
        return bases

    # -- runs -------------------------------------------------------------------------------

    def create(self, name: str, *, memory_bytes: int, pids: int) -> RunCgroup:
        """A new, empty cgroup with the limits set. Nothing runs in it until a process joins."""
        dirs = {controller: base / name for controller, base in self.bases().items()}
        run = RunCgroup(dirs, v2=self.v2, memory_bytes=memory_bytes, pids=pids)
        try:
            for d in sorted(set(dirs.values())):  # co-mounted v1 controllers share a directory
                d.mkdir()
            if self.v2:
                d = dirs[""]
                _write(d / "memory.max", str(memory_bytes))
                _write_optional(d / "memory.swap.max", "0")  # absent without swap accounting
                # On OOM, kill the whole sandbox rather than one of its processes: a runner
                # whose helper was killed is not worth keeping.
                _write_optional(d / "memory.oom.group", "1")
                _write(d / "pids.max", str(pids))
            else:
                memory = dirs["memory"]
                _write(memory / "memory.limit_in_bytes", str(memory_bytes))
                # memsw (memory + swap) exists only with swap accounting; it must be set after
                # the plain limit, which it may not undercut.
                _write_optional(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
                _write(dirs["pids"] / "pids.max", str(pids))
        except OSError as exc:
            for d in sorted(set(dirs.values())):
                try:
                    d.rmdir()
                except OSError:
                    pass
            raise CgroupError(f"cannot set up cgroup {name}: {exc}") from exc
        return run

    def sweep(self) -> int:
        """Remove empty run cgroups left by workers that are gone. Returns how many."""
        removed = 0
        for base in self.bases().values():
            for d in base.iterdir():
                if not d.is_dir() or not d.name.startswith(RUN_PREFIX):
                    continue
                try:
                    owner = int(d.name.split("-")[1])
                except (IndexError, ValueError):
                    continue
                if owner == os.getpid() or pid_alive(owner):
                    continue
                try:
                    _kill_all([d])
                    d.rmdir()
                    removed += 1
                except OSError:
                    pass
        return removed


def _write_optional(path: Path, value: str) -> None:
    try:
        _write(path, value)
    except FileNotFoundError:
        pass
