"""The node's compile cache: executables XLA compiled for modules that runs lowered, which later
runs load instead of compiling again (runner/compilecache.py is the runner's side). A class of
thirty running the same starter code compiles it once; a person running their snippet again
compiles only what they changed.

A run never writes here. At its end it reports the modules it had to compile (their bytes, at
most a few of them); the executor names each entry itself (``entry_key``: a SHA-256 of the
module's bytes, compile options and devices) and, while the node is idle, has it compiled by a
fresh runner (one that never ran a snippet, sandboxed like a run, at nice 19), one module per
runner: so a module that could subvert the compiler could only ever spoil its own entry, which
is what any run lowering that same module would have compiled anyway.

Runners read the folder read-only, by name, and cannot list it (mode 0711). An entry's name is
not its key but an HMAC of it under a secret of the node's, kept beside the folder where no
sandbox sees it (``<folder>.key``): a runner about to compile asks its supervisor, which answers
with the name when the entry is here (``lookups``: one run's answers; ``RunLookups``: the lines
on the runner's stdin). So a run can load an entry
only for a module it lowered itself, and whether a module was compiled here (someone's code,
known but for one constant, say) can be asked at most MISSES_PER_RUN times a run that find
nothing, and not at all by opening files. A student's assignment runs
(``options.private_compiles``) and graded runs load entries but add none.
``EXECUTOR_COMPILE_CACHE=0`` turns the cache off; a run can ask for fresh compilations with
``{"options": {"compile_cache": false}}`` (measuring XLA itself, say).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from collections import OrderedDict, deque
from pathlib import Path

from .runner.compilecache import MAX_MODULE_BYTES, MAX_REPORTED, entry_key

log = logging.getLogger(__name__)

# Modules waiting to be compiled; past this, the oldest of whoever has the most waiting are
# forgotten. One person has at most MAX_PENDING_EACH waiting (their oldest forgotten), and the
# queue takes each person's oldest in turn: a person reporting modules made to compile slowly
# delays anyone else's by at most one compile job.
MAX_PENDING = 256
MAX_PENDING_EACH = 2 * MAX_REPORTED
# A module whose compile job failed is not tried again for this long; one whose job was cut
# short or never ran (the node busy, no runner), for RETRY_SOON_S.
RETRY_AFTER_S = 3600.0
RETRY_SOON_S = 600.0
# A compile job's wall clock: XLA takes well under a second on the modules runs compile; a
# module made to compile for minutes is given up (and not tried again for RETRY_AFTER_S).
JOB_WALL_S = 10.0
ENTRY_MAX_BYTES = 64 * 1024**2
# A run is told at most this many times that what it asked for is not here, and answered at
# most LOOKUPS_PER_RUN times in all; then it is told it gets no more answers, and compiles
# everything itself. Ordinary snippets ask a few dozen times; guessing at someone's code takes
# a question a guess.
MISSES_PER_RUN = 64
LOOKUPS_PER_RUN = 4096
KEY = re.compile(r"[0-9a-f]{64}")
# How long an answer to a compile lookup may wait for room in the runner's stdin: a runner that
# asks and does not read is answered no more.
LOOKUP_WRITE_S = 0.5


def for_node(launcher) -> CompileCache | None:
    """This node's cache, its folder given to the launcher for its runners (None when off, or
    when the folder cannot be made)."""
    from . import settings

    if not settings.COMPILE_CACHE:
        return None
    root = Path(settings.COMPILE_CACHE_DIR) if settings.COMPILE_CACHE_DIR else default_root(launcher.sandboxed)
    folder = folder_for(root, settings.RUNTIME.id, settings.KIND, settings.SPECIFIC, settings.CPU_DEVICES,
                        os.environ.get("XLA_FLAGS", ""))
    try:
        cache = CompileCache(folder, settings.COMPILE_CACHE_MAX_MB * 1024**2).open()
    except OSError as exc:
        log.warning("no compile cache (%s): every run compiles what it uses", exc)
        return None
    launcher.use_compile_cache(str(folder))
    return cache


def default_root(sandboxed: bool) -> Path:
    if sandboxed:
        return Path("/run/jax-playground/compile")
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"jax-playground-compile-{os.getuid()}"


def folder_for(root: Path, *parts: object) -> Path:
    """One folder per runtime, device kind and device count, and per kind of host CPU: an
    entry is machine code for one of each (a folder shared between hosts keeps them apart)."""
    tag = hashlib.sha256("\0".join(map(str, (*parts, host_cpu()))).encode()).hexdigest()[:16]
    return root / tag


def host_cpu() -> str:
    """The host's CPU as XLA compiles for it: its architecture, model and feature flags."""
    import platform

    facts = [platform.machine()]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name = line.partition(":")[0].strip()
                if name in ("model name", "flags", "Features", "CPU part") and line not in facts:
                    facts.append(line.strip())
                if line.strip() == "":
                    break  # the first processor's block says it
    except OSError:
        pass
    return "\n".join(facts)


class CompileCache:
    def __init__(self, folder: Path, max_bytes: int):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._entries: OrderedDict[str, int] = OrderedDict()  # name -> bytes, least recently used first
        self._queues: OrderedDict[str, deque[dict]] = OrderedDict()  # reporter -> jobs, next first
        self._pending_keys: set[str] = set()
        self._failed: dict[str, float] = {}
        self._secret = b""
        self.stored = self.failed = self.hits = self.misses = 0

    def open(self) -> CompileCache:
        """Create the folder (listable by its owner alone) and index what an earlier worker of
        this node left there, if its entries were named with the node's secret (a new secret:
        nothing kept is named by it)."""
        self.folder.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        self._secret, made = node_secret(self.folder.parent / f"{self.folder.name}.key")
        self.folder.mkdir(exist_ok=True, mode=0o711)
        os.chmod(self.folder, 0o711)
        found = []
        for entry in os.scandir(self.folder):
            if made and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            elif entry.is_file(follow_symlinks=False) and KEY.fullmatch(entry.name):
                stat = entry.stat(follow_symlinks=False)
                found.append((stat.st_mtime, entry.name, stat.st_size))
            elif entry.name.endswith(".part"):
                os.unlink(entry.path)
        for _mtime, name, size in sorted(found):
            self._entries[name] = size
        self._evict()
        return self

    def name(self, key: str) -> str:
        """An entry's file name: the HMAC of its key under the node's secret."""
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    # -- what runs ask -----------------------------------------------------------------------

    def lookups(self) -> Callable[[str], dict]:
        """One run's answers to its runner's ``compile_lookup``: ``{"name"}`` of the entry for a
        key when it is here, ``{"name": None}`` when not, and from the MISSES_PER_RUN-th miss
        (or the LOOKUPS_PER_RUN-th question, or a malformed key) ``"spent": True`` with no name,
        ever again."""
        asked = missed = 0
        spent = False

        def lookup(key: str) -> dict:
            nonlocal asked, missed, spent
            asked += 1
            spent = spent or asked > LOOKUPS_PER_RUN or not (isinstance(key, str) and KEY.fullmatch(key))
            if spent:
                return {"name": None, "spent": True}
            name = self.name(key)
            if os.path.isfile(self.folder / name):
                with self._lock:
                    self.hits += 1
                    if name in self._entries:
                        self._entries.move_to_end(name)  # used: the last to be evicted
                return {"name": name}
            with self._lock:
                self.misses += 1
            missed += 1
            spent = missed >= MISSES_PER_RUN
            return {"name": None, "spent": True} if spent else {"name": None}

        return lookup

    # -- what runs report --------------------------------------------------------------------

    def submit(self, modules: object, reporter: str = "") -> int:
        """A run's report (``compiled_modules``): each well-formed module not yet cached or
        waiting is queued for a compile job, in ``reporter``'s turn (whose run it was). Returns
        how many were queued."""
        if not isinstance(modules, list):
            return 0
        queued = 0
        now = time.monotonic()
        for item in modules[:MAX_REPORTED]:
            job = _job(item)
            if job is None:
                continue
            key = job["key"]
            with self._lock:
                if self.name(key) in self._entries or key in self._pending_keys or now < self._failed.get(key, 0.0):
                    continue
                queue = self._queues.setdefault(reporter, deque())
                if len(queue) >= MAX_PENDING_EACH:
                    self._forget_oldest(reporter)
                elif self._waiting() >= MAX_PENDING:
                    self._forget_oldest(max(self._queues, key=lambda r: len(self._queues[r])))
                queue.append({**job, "reporter": reporter})
                self._pending_keys.add(key)
                queued += 1
        if queued:
            self._ready.set()
        return queued

    def _waiting(self) -> int:
        return sum(map(len, self._queues.values()))

    def _forget_oldest(self, reporter: str) -> None:
        """The oldest of one reporter's jobs, unless it is the one being compiled (then the
        next); under the lock."""
        queue = self._queues[reporter]
        current = next(iter(self._queues.values()))[0]
        for job in queue:
            if job is not current:
                queue.remove(job)
                self._pending_keys.discard(job["key"])
                break
        if not queue:
            del self._queues[reporter]

    def next_job(self, timeout: float) -> dict | None:
        """The next module waiting, the oldest of the reporter whose turn it is (None after
        ``timeout`` with none). Still counted as waiting until ``done``."""
        if not self._ready.wait(timeout):
            return None
        with self._lock:
            if not self._queues:
                self._ready.clear()
                return None
            return next(iter(self._queues.values()))[0]

    def done(self, job: dict, entries: list[dict], retry_after: float = RETRY_AFTER_S) -> bool:
        """A compile job's result: the entry for its module, stored under the key computed
        here, whatever the runner said. True when stored; else the module is not queued again
        for ``retry_after`` seconds."""
        key = job["key"]
        with self._lock:
            reporter = job.get("reporter", "")
            queue = self._queues.get(reporter)
            if queue and queue[0] is job:
                queue.popleft()
                del self._queues[reporter]
                if queue:
                    self._queues[reporter] = queue  # the others' turn first
            self._pending_keys.discard(key)
            if not self._queues:
                self._ready.clear()
        data = None
        for entry in entries:
            if entry.get("key") == key and isinstance(entry.get("executable"), str):
                try:
                    data = base64.b64decode(entry["executable"], validate=True)
                except (binascii.Error, ValueError):
                    data = None
                break
        if not data or len(data) > ENTRY_MAX_BYTES:
            with self._lock:
                self._failed[key] = time.monotonic() + retry_after
                self.failed += 1
            return False
        self.store(self.name(key), data)
        return True

    # -- the folder --------------------------------------------------------------------------

    def store(self, name: str, data: bytes) -> None:
        part = self.folder / f"{name}.{os.getpid()}.{threading.get_ident()}.part"
        with open(part, "wb") as f:
            f.write(data)
        os.chmod(part, 0o644)
        os.replace(part, self.folder / name)  # a reader sees all of it or nothing
        with self._lock:
            self._entries[name] = len(data)
            self._entries.move_to_end(name)
            self.stored += 1
        self._evict()

    def _evict(self) -> None:
        with self._lock:
            total = sum(self._entries.values())
            gone = []
            while total > self.max_bytes and self._entries:
                key, size = self._entries.popitem(last=False)
                total -= size
                gone.append(key)
        for key in gone:
            try:
                os.unlink(self.folder / key)
            except FileNotFoundError:
                pass

    def stats(self) -> dict:
        with self._lock:
            return {"entries": len(self._entries), "bytes": sum(self._entries.values()),
                    "waiting": self._waiting(), "stored": self.stored, "failed": self.failed,
                    "hits": self.hits, "misses": self.misses}


class RunLookups:
    """One run's ``compile_lookup`` questions (runner/compilecache.py), answered for its
    supervisor (executor/supervisor.py), as graded_run.GradedRun holds a graded run's relay. Each
    answer is a line on the runner's stdin that names the entry of the key asked, or says there
    is none, or that this run is answered no more (``over``: said once, and whatever it asks
    after is junk). ``lookup`` is the cache's ``CompileCache.lookups()``; without one (no cache
    here) the first question is told that no answer will come. ``write(data, deadline)`` writes
    to the runner's stdin."""

    def __init__(self, lookup: Callable[[str], dict] | None, write: Callable[[bytes, float], bool]):
        self.lookup = lookup
        self.write = write
        self.over = False

    @property
    def answering(self) -> bool:
        """Whether the run's stdin stays open after its request, for the answers."""
        return self.lookup is not None

    def answer(self, fields: dict | None, *, can_write: bool) -> bool:
        """Answer one question (its fields rebuilt against the protocol, None when malformed),
        if the runner's stdin ``can_write`` now: nothing is answered while a graded run's checks
        ask theirs on it (the runner asks no more by then). False when the question is junk:
        malformed, or asked after the run was told it gets no more answers."""
        if fields is None or self.over:
            return False
        if not can_write:
            return True
        key = fields["key"]
        reply = self.lookup(key) if self.lookup is not None else {"name": None, "spent": True}
        self.over = bool(reply.get("spent"))  # said once; whatever it asks after, unanswered
        line = (json.dumps({"key": key, **reply}) + "\n").encode()
        if not self.write(line, time.monotonic() + LOOKUP_WRITE_S):
            self.over = True  # it does not read its answers: it gets no more
        return True


def node_secret(path: Path) -> tuple[bytes, bool]:
    """The secret entries are named with (32 random bytes, readable by the executor's user
    alone, kept where no sandbox sees it), made if there is none; and whether it was made now.
    Executors sharing the folder share it: the first one's is kept."""
    try:
        secret = path.read_bytes()
        if len(secret) == 32:
            return secret, False
        os.unlink(path)  # cut short: a new one, and the folder's entries go with the old
    except FileNotFoundError:
        pass
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(32))
    finally:
        os.close(fd)
    try:
        os.link(part, path)  # whole, and only if no other executor was first
        made = True
    except FileExistsError:
        made = False
    finally:
        os.unlink(part)
    return path.read_bytes(), made


def _job(item: object) -> dict | None:
    """A reported module as a compile job (its key computed here), or None if it is not one."""
    if not isinstance(item, dict):
        return None
    try:
        module = base64.b64decode(item["module"], validate=True)
        options = base64.b64decode(item["options"], validate=True)
        devices, shape = item["devices"], item["shape"]
    except (KeyError, TypeError, binascii.Error, ValueError):
        return None
    if not (0 < len(module) <= MAX_MODULE_BYTES and len(options) <= MAX_MODULE_BYTES):
        return None
    if not (isinstance(devices, list) and isinstance(shape, list) and 0 < len(devices) <= 4096 and len(shape) <= 8
            and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**31 for d in devices)
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 4096 for n in shape)):
        return None
    product = 1
    for n in shape:
        product *= n
    if product != len(devices):
        return None
    return {"key": entry_key(module, options, devices, shape),
            "request": {"module": item["module"], "options": item["options"], "devices": devices, "shape": shape}}
