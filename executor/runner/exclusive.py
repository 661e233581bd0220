"""A stand-in exclusive device, for the tests and benchmarks of a node without one.

A TPU chip is held by one process at a time: when its backend starts, libtpu takes a lockfile
for the chips the process sees (``TPU_VISIBLE_CHIPS``, else all of the host's), holds it until
the process exits, and a second process that tries fails at once with "ABORTED: Internal error
when accessing libtpu multi-process lockfile". This module does the same with one file a chip in
a folder (``JAXPLAY_STANDIN_DEVICE``, which the worker fills: executor/chips.py): an exclusive
``flock`` on ``chip<N>.lock`` for each chip the process sees, taken when the runner starts its
backend (``open_device``: the warm-up, the pool's "warm", and before a snippet or a session
runs), held until the process ends (the kernel drops it with the last descriptor), and refused
at once when another process holds it, with libtpu's words. ``JAXPLAY_STANDIN_OPEN_MS`` is how
long an open takes (a v5e's takes 7 to 10 s).

It exists only where the worker sets those variables (EXECUTOR_STANDIN_DEVICE): the pool's
logic (one holder per chip, its line, its leases) is then tested in CI through the real worker
and sandbox, and a pool that let two runners open one chip would fail as it would on a TPU.

Only the standard library: the runner is bound into the sandbox alone.
"""

from __future__ import annotations

import fcntl
import os
import time

FOLDER_VAR = "JAXPLAY_STANDIN_DEVICE"
OPEN_MS_VAR = "JAXPLAY_STANDIN_OPEN_MS"
LOCKFILE_ERROR = "ABORTED: Internal error when accessing libtpu multi-process lockfile"
# Set by the pool of an exclusive device (executor/chips.py), real or stand-in: the runner imports
# jax but starts no backend before "ready", so that it can be started while another process still
# holds the chip, and opens the chip only when told "warm" ("warmed" then says what it found).
DEFER_BACKEND_VAR = "JAXPLAY_DEFER_BACKEND"

_held: list[int] = []


def lock_name(chip: int | str) -> str:
    return f"chip{chip}.lock"


def visible_chips(folder: str) -> list[str]:
    """The chips this process sees: ``TPU_VISIBLE_CHIPS``, else every chip in the folder."""
    visible = os.environ.get("TPU_VISIBLE_CHIPS", "").strip()
    if visible:
        return [c.strip() for c in visible.split(",") if c.strip()]
    return sorted(n[len("chip"):-len(".lock")] for n in os.listdir(folder)
                  if n.startswith("chip") and n.endswith(".lock"))


def open_device() -> bool:
    """Hold this process's chips, as libtpu does when the backend starts; a RuntimeError at once,
    holding none, when another process holds one of them. Nothing where no stand-in is set, and
    nothing the second time. True when this call opened them."""
    folder = os.environ.get(FOLDER_VAR)
    if not folder or _held:
        return False
    fds: list[int] = []
    for chip in visible_chips(folder):
        fd = os.open(os.path.join(folder, lock_name(chip)), os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            for other in fds:
                os.close(other)
            raise RuntimeError(f"Unable to initialize backend 'tpu': {LOCKFILE_ERROR} "
                               f"(stand-in chip {chip} is held by another process)") from None
        fds.append(fd)
    _held.extend(fds)
    delay_ms = int(os.environ.get(OPEN_MS_VAR) or 0)
    if delay_ms:
        time.sleep(delay_ms / 1000)
    return True
