"""The web side's one view of device strings and of the executors online.

A run, a shared snippet and an assignment each name a device: a kind (``cpu``, ``gpu``,
``tpu``) or a specific device kind of one (``gpu:h200``, as the workers advertise it). Which
strings are valid, and how long after its last heartbeat a worker still counts as online
(``EXECUTOR_ONLINE_WINDOW_S``), is decided here and nowhere else, so that a run, a course's
run and ``/api/devices`` never disagree about what is online.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from executor import registry

from web.errors import ActionError

from .redis import get_redis


def check_device(value) -> str:
    """``value`` as a device string a request may name, or an ``ActionError`` (400) saying which
    ones there are."""
    if (not isinstance(value, str) or not registry.DEVICE_PATTERN.fullmatch(value)
            or registry.parse_device(value)[0] not in settings.RUN_DEVICE_KINDS):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "…"  # never an echo of a flood
        raise ActionError(
            _("unknown device %(device)s; choose one of %(kinds)s, or a specific device kind of one, such as gpu:h200")
            % {"device": shown, "kinds": ", ".join(settings.RUN_DEVICE_KINDS)}
        )
    return value


def online_workers(device: str) -> list[dict]:
    """What each worker online for ``device`` (a kind or a specific kind) said in its last beat."""
    return registry.online_workers(get_redis(), device, settings.EXECUTOR_ONLINE_WINDOW_S)


def check_online(device: str, runtime: str | None = None) -> None:
    """A device (with a runtime: of that runtime) no worker serves now is a ``503`` at once,
    never a run that waits forever."""
    # "cpu@<id>", the first runtime's too: a bare kind would count every runtime's workers.
    if online_workers(f"{device}@{runtime}" if runtime else device):
        return
    if runtime and online_workers(device):
        raise ActionError(_("no %(device)s executor of runtime %(runtime)s is online right now; GET /api/runtimes "
                            "says which kinds serve each runtime") % {"device": device, "runtime": runtime}, status=503)
    raise ActionError(_("no %(device)s executor is online right now; GET /api/devices lists those that are")
                      % {"device": device}, status=503)


def describe(device: str) -> dict:
    """What ``GET /api/devices`` says of one kind (with its specific kinds online)."""
    return registry.describe_kind(get_redis(), device, settings.EXECUTOR_ONLINE_WINDOW_S)


def describe_all() -> list[dict]:
    return [describe(kind) for kind in settings.RUN_DEVICE_KINDS]


def choices(current: str | None = None) -> list[str]:
    """The device strings a form offers: each kind, followed by the specific kinds online under
    it (not a CPU worker's ``cpu:cpu``), and ``current`` wherever it is."""
    found: list[str] = []
    for kind in describe_all():
        found.append(kind["kind"])
        found += [s["device"] for s in kind["specific"] if registry.parse_device(s["device"])[1] != kind["kind"]]
    if current and current not in found:
        found.append(current)
    return found


def unsandboxed(devices: list[dict]) -> bool:
    """Whether any kind online runs snippets without the sandbox (the page then says so)."""
    return any(d["online"] and d["sandboxed"] is False for d in devices)
