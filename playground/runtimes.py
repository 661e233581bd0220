"""The web side's one view of runtimes (``runtimes/runtimes.toml``, read through
``executor.runtimes``): which ids a run, a snippet or an assignment may name, and which kinds
serve each now (from the workers' heartbeats). Like devices.py for device strings."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from executor import registry, runtimes

from web.errors import ActionError

from . import devices


def check_runtime(value) -> tuple[str, str | None]:
    """``value`` (None or "": the default) as a runtime id, with a note for a retired id (which
    runs on its successor); an ``ActionError`` (400) naming the known ids."""
    if value is not None and not isinstance(value, str):
        raise ActionError(_("'%(name)s' must be a runtime's id, as GET /api/runtimes lists them") % {"name": "runtime"})
    try:
        runtime, note = runtimes.catalog().resolve(value or None)
    except runtimes.UnknownRuntime as exc:
        shown = repr(exc.name) if len(exc.name) <= 60 else repr(exc.name[:57]) + "…"  # never echo a megabyte
        raise ActionError(_("unknown runtime %(name)s: use one of %(known)s (GET /api/runtimes lists them)")
                          % {"name": shown, "known": ", ".join(exc.known)}) from None
    if note is not None:  # the person's answer says it in their language
        note = (_("runtime %(name)s is retired: this ran on its successor, %(successor)s")
                % {"name": value, "successor": runtime.id})
    return runtime.id, note


def current(runtime_id: str | None) -> str:
    """The runtime a stored id runs on now: itself, or a retired id's successor (an id the
    catalog no longer knows at all is left as it is: its runs are refused as unserved)."""
    try:
        return runtimes.catalog().resolve(runtime_id or None)[0].id
    except runtimes.UnknownRuntime:
        return runtime_id or runtimes.catalog().default


def default() -> str:
    return runtimes.catalog().default


def _online() -> list[dict]:
    return [w for kind in settings.RUN_DEVICE_KINDS for w in devices.online_workers(kind)]


def _host_versions(rt, workers: list[dict]) -> dict:
    """A host runtime's versions are its workers' (read when each started); none while none serves it."""
    serving = [w for w in workers if w.get("runtime") == rt.id]
    if not serving:
        return {}
    return {"jax": serving[0].get("jax_version"), "jaxlib": serving[0].get("jaxlib_version")}


def _listed(rt, serving: dict) -> bool:
    """Whether the picker and the API list a runtime: a host runtime only while a worker serves it."""
    return rt.environment != "host" or bool(serving.get(rt.id))


def describe_all() -> list[dict]:
    """What ``GET /api/runtimes`` says: each runtime with the kinds online that serve it."""
    workers = _online()
    serving = registry.runtimes_online(workers)
    return [{**rt.describe(), **_host_versions(rt, workers), "kinds": serving.get(rt.id, [])}
            for rt in runtimes.catalog().runtimes.values() if _listed(rt, serving)]


def retired() -> dict[str, str]:
    return dict(runtimes.catalog().retired)


def choices() -> list[dict]:
    """The runtime picker's options, the default first: {id, label, default}."""
    catalog = runtimes.catalog().runtimes.values()
    workers = _online() if any(rt.environment == "host" for rt in catalog) else []
    serving = registry.runtimes_online(workers)
    listed = sorted((rt for rt in catalog if _listed(rt, serving)), key=lambda rt: not rt.default)
    return [{"id": rt.id, "label": f"JAX {_host_versions(rt, workers).get('jax') or rt.jax or rt.id}",
             "default": rt.default} for rt in listed]


def jax_of(runtime_id: str) -> str:
    """The JAX version a runtime (or a retired id's successor) pins, for a page to say."""
    try:
        return runtimes.catalog().resolve(runtime_id)[0].jax or runtime_id
    except runtimes.UnknownRuntime:
        return runtime_id
