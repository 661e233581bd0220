"""Wires the runner's features around one run; ``main`` calls these at four points:

    prepare(channel)   during warm-up, after jax is imported: capture hooks, the ``jaxplay``
                       module (prepare_process: a template does these once before forking),
                       matplotlib's backend (an environment variable: nothing imported) and the
                       worker's font list (prepare_run: in each run's own process)
    configure(options) once the request arrived (``options["capture"] = False`` turns capture off)
    run(source, ns)    the snippet, through the notebook transformation
    finish()           figures still open are sent

and ``error_event(exc, event)`` adds a JAX explanation to an error event.
"""

from __future__ import annotations

import os
import sys

from . import capture, common, compilecache, display, explain, fonts, notebook

LIBRARIES = ("numpy", "scipy", "jax", "jaxlib", "optax", "flax", "equinox", "chex", "einops",
             "matplotlib", "rich")

_state = {"capture": False}


def libraries() -> dict[str, str]:
    """{distribution: version} of the libraries every run can import (metadata only: nothing is
    imported)."""
    from importlib import metadata

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def prepare(channel, font_cache: str | None = None, compile_cache: str | None = None) -> None:
    prepare_process()
    prepare_run(channel, font_cache, compile_cache)


def prepare_process() -> None:
    """What every run shares and a template can do once before forking: the capture hooks and
    the ``jaxplay`` module. Starts no thread and no backend."""
    _state["capture"] = capture.install()
    compilecache.install()  # inert until prepare_run names the node's cache
    from . import checklib, jaxplay

    sys.modules["jaxplay"] = jaxplay
    sys.modules["jaxplay.grading"] = checklib  # an assignment's check code imports its helpers here
    jaxplay.grading = checklib


def prepare_run(channel, font_cache: str | None = None, compile_cache: str | None = None) -> None:
    """What belongs to one run's process: its event channel, matplotlib's settings, its copy
    of the font list (in the run's own /tmp) and the node's compile cache (read-only)."""
    common.set_channel(channel)
    compilecache.use(compile_cache)
    package = __name__.rpartition(".")[0]
    os.environ["MPLBACKEND"] = f"module://{package}.mpl_backend"
    # matplotlib wants a writable config/cache directory; the sandbox's HOME is /tmp.
    os.environ.setdefault("MPLCONFIGDIR", fonts.config_dir())
    try:
        fonts.install(font_cache)  # the worker's font list: the first figure skips the font scan
    except OSError:
        pass  # only slower: matplotlib scans the fonts itself


def configure(options: dict | None) -> None:
    options = options or {}
    if options.get("capture") is False:
        capture.uninstall()
        _state["capture"] = False
    if options.get("compile_cache") is False:  # every compilation XLA's own, measured as such
        compilecache.use(None)


def run(source: str, namespace: dict) -> None:
    notebook.run(source, namespace, display.show_value)


def finish() -> None:
    try:
        display.flush_figures()
    except Exception:  # noqa: BLE001 - the run's result is already decided
        pass
    common.flush_user_streams()


def error_event(exc: BaseException, event: dict) -> dict:
    return explain.add_explanation(exc, event)
