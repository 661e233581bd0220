"""What a runner needs of the node's accelerator, declared once for every sandbox backend: the
environment variables its runtime reads, the device nodes it opens, and why a runner that could
not open its device failed.

    worker start ── device_nodes(kind)  ─▶ /dev/vfio/*, /dev/accel*, /dev/nvidia* (bound by bwrap)
                 └─ accelerator_env()   ─▶ TPU_*, CUDA_VISIBLE_DEVICES, NVIDIA_*, XLA_PYTHON_CLIENT_*
                                            (passed by every launcher, nothing else of the worker's)

libtpu reads the host's topology from ``TPU_*`` (``TPU_ACCELERATOR_TYPE``, ``TPU_SKIP_MDS_QUERY``,
``TPU_CHIPS_PER_HOST_BOUNDS``, ``TPU_HOST_BOUNDS``, ``TPU_WORKER_ID``...): without them it asks a
metadata server a sandbox cannot reach and waits. A GPU's runtime reads which devices it may use
and how much of their memory it takes. No other variable of the worker's reaches a runner.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Mapping

# The accelerator's variables a runner is given, by name or shell pattern. One list for every
# launcher (none, fork, bwrap).
ACCELERATOR_ENV = ("TPU_*", "CUDA_VISIBLE_DEVICES", "NVIDIA_*", "XLA_PYTHON_CLIENT_*")
# A value is passed as it is, within reason: a variable is no way to smuggle a megabyte in.
MAX_VALUE_CHARS = 4096

# The device nodes each kind of node binds into its sandboxes, found when the worker starts:
# TPU hosts show a chip as /dev/accel<n> or, under VFIO, /dev/vfio/<n> beside /dev/vfio/vfio; a
# GPU as /dev/nvidia<n> with /dev/nvidiactl, /dev/nvidia-uvm and the like.
DEVICE_GLOBS = {
    "tpu": ("/dev/accel*", "/dev/vfio/*"),
    "gpu": ("/dev/nvidia*", "/dev/dri/renderD*"),
}


def accelerator_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's variables that a runner's accelerator runtime needs: those ``ACCELERATOR_ENV``
    names, and no other."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in ACCELERATOR_ENV)
            and len(value) <= MAX_VALUE_CHARS and "\0" not in value}


def device_nodes(kind: str, globs: Mapping[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The character devices this node has for ``kind`` (none for a CPU node), sorted; folders
    (``/dev/nvidia-caps``) are bound by their nodes, not whole."""
    globs = DEVICE_GLOBS if globs is None else globs
    found = set()
    for pattern in globs.get(kind, ()):
        for path in glob.glob(pattern):
            if os.path.isdir(path):
                found.update(p for p in glob.glob(os.path.join(path, "*")) if not os.path.isdir(p))
            else:
                found.add(path)
    return tuple(sorted(found))


# Why a runner did not become ready, read from what its runtime said: the first that matches.
# Each names the cause an operator can act on.
START_FAILURES = (
    ("device_busy", re.compile(r"lockfile|TPU.{0,40}already in use|device or resource busy|CUDA_ERROR_(?:OUT_OF_MEMORY|"
                               r"DEVICE_UNAVAILABLE)|all CUDA-capable devices are busy", re.IGNORECASE),
     "the device is held by another process (libtpu lets one process hold a chip)"),
    ("no_metadata", re.compile(r"metadata|TPU_SKIP_MDS_QUERY|169\.254\.169\.254", re.IGNORECASE),
     "the accelerator's runtime asked for a metadata server it cannot reach: the host's TPU_* variables are "
     "missing (EXECUTOR_DEVICES, ACCELERATOR_ENV)"),
    ("no_device_node", re.compile(r"/dev/(?:accel|vfio|nvidia)\S*.{0,60}(?:No such file|not found|Permission denied)|"
                                  r"No such file or directory.{0,60}/dev/(?:accel|vfio|nvidia)|"
                                  r"no (?:TPU|GPU|CUDA) devices? (?:found|available)|"
                                  r"Unable to initialize backend '(?:tpu|cuda|gpu)'", re.IGNORECASE),
     "the runner could not open the device node: none is bound into the sandbox, or it does not exist "
     "(set EXECUTOR_DEVICES)"),
)


def start_failure(said: str) -> tuple[str, str] | None:
    """``(code, reason)`` for what a runner that failed to start printed, or None when nothing
    known matches (the caller then gives the text itself)."""
    for code, pattern, reason in START_FAILURES:
        if pattern.search(said):
            return code, reason
    return None
