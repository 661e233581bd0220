"""The web side's one view of runtimes (``runtimes/runtimes.toml``, read through
``executor.runtimes``): which ids a run, a snippet or an assignment may name, and which kinds
serve each now (from the workers' heartbeats). Like devices.py for device strings."""

from __future__ import annotations

from django.conf import settings

from executor import registry, runtimes

from web.errors import ActionError

from . import devices


def check_runtime(value) -> tuple[str, str | None]:
    """``value`` (None or "": the default) as a runtime id, with a note for a retired id (which
    runs on its successor); an ``ActionError`` (400) naming the known ids."""
    if value is not None and not isinstance(value, str):
        raise ActionError("'runtime' must be a runtime's id, as GET /api/runtimes lists them")
    try:
        runtime, note = runtimes.catalog().resolve(value or None)
    except runtimes.UnknownRuntime as exc:
        raise ActionError(f"{exc} (GET /api/runtimes lists them)") from None
    return runtime.id, note


def default() -> str:
    return runtimes.catalog().default


def describe_all() -> list[dict]:
    """What ``GET /api/runtimes`` says: each runtime with the kinds online that serve it."""
    workers = [w for kind in settings.RUN_DEVICE_KINDS for w in devices.online_workers(kind)]
    serving = registry.runtimes_online(workers)
    return [{**rt.describe(), "kinds": serving.get(rt.id, [])} for rt in runtimes.catalog().runtimes.values()]


def retired() -> dict[str, str]:
    return dict(runtimes.catalog().retired)
