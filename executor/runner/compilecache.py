"""The node's compile cache, as a runner sees it: executables that XLA compiled for modules an
earlier run lowered, loaded instead of compiled again.

A run never writes an entry, and cannot find one by itself. Each module it is about to compile
has a key (``entry_key``: a SHA-256 of the module's bytes, its compile options and its devices,
which anyone can compute and nobody can choose); the runner asks its supervisor for the entry's
name (``compile_lookup`` on the event pipe, the answer a line on its stdin) and reads that file
from the cache's folder, bound read-only in the sandbox. Names are an HMAC of the key under a
secret the sandbox never sees, and the executor answers a run only so many misses: whether
some module was compiled here cannot be tested for by the thousand. A module the run had
to compile is reported at its end (``compiled_modules``, at most MAX_REPORTED of at most
MAX_MODULE_BYTES each); the executor then has a fresh runner, one that never ran a snippet,
compile it from those bytes alone (``compile_modules``) and stores what it returns under the key
it computes itself (executor/compilecache.py). So an entry is always what XLA makes of exactly
the module its name hashes: a hostile run can have its own modules compiled, never plant an
executable under another module's name.

A hit is timed like a compilation (JAX's duration event still fires, for the load), and counted
(``loaded``): capture and ``jaxplay.bench`` say which compilations were loads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading

from . import common

# What one run reports for compiling: no more modules than this, none larger than this.
MAX_REPORTED = 8
MAX_MODULE_BYTES = 128 * 1024

# wanted: the folder the run was given, kept for an install that comes later (a lean runner
# installs when the snippet imports jax, after prepare_run has named the folder).
_state: dict = {"dir": None, "wanted": None, "point": None, "hits": 0, "reported": [], "seen": set(),
                "answers": None}
_lock = threading.Lock()
_asking = threading.Lock()


def entry_key(module: bytes, options: bytes, device_ids: list[int], shape: list[int]) -> str:
    """An entry's name: the same here, in the executor and in the runner that compiles it."""
    digest = hashlib.sha256()
    for part in (module, options, ",".join(map(str, device_ids)).encode(), ",".join(map(str, shape)).encode()):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def install() -> bool:
    """Wrap XLA's compile step (in the template: once for every runner). Inert until ``use``
    names the cache's folder. False where this JAX's compile step is not the one known here."""
    from . import jaxcompat

    try:
        point = jaxcompat.compile_point()
    except (ImportError, AttributeError):
        return False
    original = point.original

    def compile_or_get_cached(*args, **kwargs):
        folder = _state["dir"]
        if folder is None:
            return original(*args, **kwargs)
        bound = point.arguments(args, kwargs)
        if bound.get("host_callbacks") or bound.get("pgle_profiler") is not None:
            return original(*args, **kwargs)
        try:
            module = point.module_bytes(bound["computation"])
            options = bound["compile_options"].SerializeAsString()
            devices = bound["devices"]
            ids, shape = [int(d.id) for d in devices.flat], [int(n) for n in devices.shape]
        except Exception:  # noqa: BLE001 - JAX's internals (the module's serializer) raise anything; compile as ever
            return original(*args, **kwargs)
        key = entry_key(module, options, ids, shape)
        name = _ask(key)
        serialized = _read(folder, name) if name else None
        if serialized is not None:
            try:
                executable = point.load(bound["backend"], serialized, bound.get("executable_devices"),
                                        bound["compile_options"])
            except Exception:  # noqa: BLE001 - XLA refuses an entry with its own errors; the run compiles instead
                executable = None
            if executable is not None:
                with _lock:
                    _state["hits"] += 1
                return executable
        executable = original(*args, **kwargs)
        with _lock:
            if (len(module) <= MAX_MODULE_BYTES and len(_state["reported"]) < MAX_REPORTED
                    and key not in _state["seen"]):
                _state["seen"].add(key)
                _state["reported"].append({"key": key, "module": module, "options": options,
                                           "devices": ids, "shape": shape})
        return executable

    point.replace(compile_or_get_cached)
    _state["point"] = point
    use(_state["wanted"])
    return True


def use(folder: str | None) -> None:
    """This run's cache folder (None: compile everything, report nothing)."""
    _state["wanted"] = folder
    _state["dir"] = folder if folder and _state["point"] is not None and os.path.isdir(folder) else None


def listen(stdin) -> None:
    """Where the supervisor's answers to ``compile_lookup`` arrive (the runner's stdin, after its
    request); None: ask no more, so every compilation is XLA's own. Only a snippet's run asks: a
    checker, an analyst or a graded run answering its checks have nobody answering."""
    with _asking:
        _state["answers"] = stdin


def _ask(key: str) -> str | None:
    """The entry's name for ``key`` if the node has it (None: compile). One question at a time:
    compilations on other threads wait for the answer, which is a line on stdin."""
    with _asking:
        answers = _state["answers"]
        channel = common.outbox.channel
        if answers is None or channel is None:
            return None
        channel.send("compile_lookup", key=key)  # not the run's event budget: the executor counts these
        try:
            line = answers.readline(512)
            reply = json.loads(line) if line else None
        except (OSError, ValueError):
            reply = None
        if not isinstance(reply, dict) or reply.get("spent"):
            _state["answers"] = None  # closed, garbled, or no more answers for this run
        if not isinstance(reply, dict) or reply.get("key") != key:
            return None
        name = reply.get("name")
        return name if isinstance(name, str) and len(name) == 64 and name.isalnum() else None


def _read(folder: str, name: str) -> bytes | None:
    try:
        with open(os.path.join(folder, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def loaded() -> int:
    """How many executables this process has loaded from the cache so far."""
    return _state["hits"]


def report(channel) -> None:
    """At the run's end: the modules it compiled, for the executor to have compiled cleanly."""
    with _lock:
        reported, _state["reported"] = _state["reported"], []
    if reported:
        channel.send("compiled_modules", modules=[
            {"module": base64.b64encode(m["module"]).decode(), "options": base64.b64encode(m["options"]).decode(),
             "devices": m["devices"], "shape": m["shape"]} for m in reported])


def compile_modules(modules: list, channel) -> None:
    """A compile job's runner (fresh from the template, no snippet ever ran in it): each module
    compiled from its bytes alone and sent back serialized. The executor names each entry
    itself; the ``key`` sent here is only checked against its own."""
    from . import jaxcompat

    point = _state["point"] or jaxcompat.compile_point()
    for item in modules:
        try:
            module = base64.b64decode(item["module"])
            options = base64.b64decode(item["options"])
            serialized = point.compile_bytes(module, options, item["devices"], item["shape"])
            channel.send("compiled_entry", key=entry_key(module, options, item["devices"], item["shape"]),
                         executable=base64.b64encode(serialized).decode())
        except Exception as exc:  # noqa: BLE001 - a reported module may fail MLIR's parser or XLA anyhow; it stays uncached
            channel.send("compiled_entry", key=None, error=f"{type(exc).__name__}: {exc}"[:300])
