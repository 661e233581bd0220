"""State changes of snippets. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes
state without validating."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from executor import events as ev
from executor import runtimes
from playground.access import access_run_for_user
from playground.actions.runs import check_code
from playground.devices import check_device
from playground.runtimes import check_runtime
from playground.models import Run, RunEvent
from web.api import text
from web.errors import ActionError
from web.ratelimit import check_rate

from .models import Snippet
from .slugs import content_hash, slug_candidates

TITLE_MAX = 200
DESCRIPTION_MAX = 10_000


def check_create_snippet(payload, *, user, client: str) -> tuple[Snippet, bool]:
    """Validate a share and save it; (snippet, created). The same content gives the same snippet.
    ``client``: who shares it (``web.clients.client_key``), whom the hourly limit counts."""
    if not isinstance(payload, dict):
        raise ActionError("the request body must be a JSON object")
    code = check_code(payload.get("code"))
    title = text(payload, "title", TITLE_MAX, strip=True, unit="characters", default="")
    description = text(payload, "description", DESCRIPTION_MAX, strip=True, unit="characters", default="")
    run = None
    if payload.get("run") is not None:
        run = access_run_for_user(payload["run"], user)
        if run is None:
            raise ActionError("'run' names no run", status=400)
    device = check_device(payload.get("device", run.device if run else settings.RUN_DEFAULT_DEVICE))
    runtime, _note = check_runtime(payload.get("runtime", run.runtime if run else None))
    parent = None
    if payload.get("parent") is not None:
        if not isinstance(payload["parent"], str):
            raise ActionError("'parent' must be a snippet's slug")
        parent = Snippet.objects.filter(slug=payload["parent"], removed_at__isnull=True).first()
        if parent is None:
            raise ActionError(f"'parent' names no snippet: {payload['parent']!r}")
    # A run of other code (edited since), on another device or runtime is not this snippet's output.
    if run is not None and (run.code != code or run.device != device or run.runtime != runtime):
        run = None
    check_rate("snippets", client, settings.SNIPPET_RATE_LIMIT_PER_HOUR, 3600, "shared snippets")
    return do_create_snippet(code=code, title=title, description=description, device=device, run=run,
                             runtime=runtime, parent=parent,
                             owner=user if user is not None and user.is_authenticated else None, sharer=client)


def do_create_snippet(*, code: str, title: str, description: str, device: str, run: Run | None,
                      parent: Snippet | None, owner, sharer: str = "",
                      runtime: str = runtimes.FIRST) -> tuple[Snippet, bool]:
    """``sharer``: the client key of who shares it (the first to share this content)."""
    options: dict = {}
    digest = content_hash(code, title, description, device, options, runtime)
    existing = Snippet.objects.filter(content_hash=digest).first()
    if existing is not None:
        if run is not None and existing.run_id is None:
            Snippet.objects.filter(pk=existing.pk, run__isnull=True).update(run=run)
            existing.refresh_from_db()
        return existing, False
    jax_version, jaxlib_version = versions(run, runtime)
    for slug in slug_candidates(digest):
        try:
            with transaction.atomic():
                return Snippet.objects.create(
                    slug=slug, content_hash=digest, code=code, title=title, description=description, device=device,
                    runtime=runtime, options=options, jax_version=jax_version, jaxlib_version=jaxlib_version, run=run,
                    parent=parent, owner=owner, sharer_key=sharer[:80],
                ), True
        except IntegrityError:
            same = Snippet.objects.filter(content_hash=digest).first()
            if same is not None:  # saved by a concurrent request just now
                return same, False
            # else: another content's slug begins the same way; take a longer one
    raise ActionError("could not find a free link for this snippet", status=500)


def versions(run: Run | None, runtime: str) -> tuple[str, str]:
    """JAX and jaxlib versions: the run's, else those its runtime pins."""
    libraries: dict = {}
    jax_version = ""
    if run is not None:
        started = RunEvent.objects.filter(run=run, type=ev.STARTED).first()
        if started is not None:
            jax_version = started.data.get("jax_version") or ""
            libraries = started.data.get("libraries") or {}
    if not jax_version:
        pinned = runtimes.catalog().resolve(runtime)[0]
        jax_version, libraries = pinned.jax or "", {"jaxlib": pinned.jaxlib or ""}
    return str(jax_version)[:40], str(libraries.get("jaxlib") or "")[:40]


def do_attach_first_run(slug: str, run: Run, *, who: str) -> None:
    """A snippet shared unrun keeps the first run of its code that its sharer (``who``, a client
    key) starts as its saved output. Anyone else's run of that code (a visitor of a link shared a
    moment ago) is not kept: it would become what the link shows for good, and a run its starter
    could cancel under the link."""
    Snippet.objects.filter(slug=slug, run__isnull=True, code=run.code, device=run.device, runtime=run.runtime,
                           sharer_key=who).update(run=run)


def do_hide_snippet(snippet: Snippet) -> None:
    """Its owner deleted it: off their list and off search engines; the link keeps working."""
    if snippet.hidden_at is None:
        Snippet.objects.filter(pk=snippet.pk).update(hidden_at=timezone.now())
