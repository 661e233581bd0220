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

import importlib.abc
import importlib.util
import os
import sys

from . import capture, common, compilecache, display, explain, fonts, notebook

# capture_off: a run's options turned capture off (a lean runner then installs none when jax comes).
# profile: the run's options asked for a profile (runner/profile.py).
_state = {"capture": False, "capture_off": False, "profile": False}


def libraries() -> dict[str, str]:
    """{distribution: version} of the libraries every run can import (metadata only: nothing is
    imported)."""
    from importlib import metadata

    out = {}
    for name in common.LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def prepare(channel, font_cache: str | None = None, compile_cache: str | None = None) -> None:
    prepare_process()
    prepare_run(channel, font_cache, compile_cache)


def prepare_process(defer_jax: bool = False, cpu_devices: int = 0) -> None:
    """What every run shares and a template can do once before forking: the capture hooks and
    the ``jaxplay`` module. Starts no thread and no backend. ``defer_jax`` (a lean template,
    which has not imported jax): the hooks, and the simulated CPU devices, are put in place
    when a run imports jax, as that import ends."""
    if defer_jax:
        after_import("jax", lambda: _jax_imported(cpu_devices))
    else:
        _install_jax_hooks()
    from . import checklib, jaxplay

    sys.modules["jaxplay"] = jaxplay
    sys.modules["jaxplay.grading"] = checklib  # an assignment's check code imports its helpers here
    jaxplay.grading = checklib


def _install_jax_hooks() -> None:
    if not _state["capture_off"]:
        _state["capture"] = capture.install()
    compilecache.install()  # inert until prepare_run names the node's cache


def _jax_imported(cpu_devices: int) -> None:
    from . import jaxcompat

    if cpu_devices:
        jaxcompat.set_cpu_devices(cpu_devices)
    _install_jax_hooks()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds ``name`` as the other finders do, and calls ``then`` once its module has run."""

    def __init__(self, name: str, then):
        self.name = name
        self.then = then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once; and find_spec below does not come here again
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            try:
                self.then()
            # Our code, run inside the snippet's import: whatever it raises (a jax whose internals
            # moved) must not fail that import, which has succeeded; only the extras are missing.
            except Exception as exc:  # noqa: BLE001
                print(f"jaxplay: {self.name} is imported without the playground's hooks: {exc}", file=sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


def after_import(name: str, then) -> None:
    """``then()`` right after the first import of the top-level module ``name`` has run."""
    sys.meta_path.insert(0, _AfterImport(name, then))


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
        _state["capture_off"] = True
    if options.get("compile_cache") is False:  # every compilation XLA's own, measured as such
        compilecache.use(None)
    _state["profile"] = options.get("profile") is True


def start_profile(channel):
    """The run's profile, started, when its options asked for one (None otherwise; said on the
    channel when it cannot start)."""
    if not _state["profile"]:
        return None
    from .profile import Profile

    profile = Profile.start()
    if isinstance(profile, str):
        channel.send("profile_trace", error=profile)
        return None
    return profile


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
