"""State changes of snippets. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes
state without validating."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor import events as ev
from executor import registry, runtimes
from playground import quotas
from playground.access import access_run_for_user
from playground.actions.runs import check_code, check_options, check_start_run, check_stdin
from playground.devices import check_device, check_online
from playground.runtimes import check_runtime, current, jax_of
from playground.models import Run, RunEvent
from web.api import text
from web.clients import Client
from web.errors import ActionError
from web.ratelimit import check_rate

from .models import Comparison, Snippet
from .slugs import ALPHABET, LENGTH, content_hash, slug_candidates

TITLE_MAX = 200
DESCRIPTION_MAX = 10_000
SHARED_SNIPPETS = gettext_lazy("shared snippets")
COMPARISONS = gettext_lazy("comparisons")


def check_create_snippet(payload, *, user, client: Client) -> tuple[Snippet, bool]:
    """Validate a share and save it; (snippet, created). The same content gives the same snippet.
    ``client``: who shares it (``web.clients``): the hourly limit counts its client key (an
    account, else the address: a snippet is a page for good, which identities must not
    multiply), and its sharer is its person (whose first run of it the snippet keeps)."""
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object"))
    code = check_code(payload.get("code"))
    stdin = check_stdin(payload.get("stdin"))
    title = text(payload, "title", TITLE_MAX, strip=True, unit="characters", default="")
    description = text(payload, "description", DESCRIPTION_MAX, strip=True, unit="characters", default="")
    run = None
    if payload.get("run") is not None:
        run = access_run_for_user(payload["run"], user)
        if run is None:
            raise ActionError(_("'%(name)s' names no run") % {"name": "run"}, status=400)
    device = check_device(payload.get("device", run.device if run else settings.RUN_DEFAULT_DEVICE))
    runtime, _note = check_runtime(payload.get("runtime", run.runtime if run else None))
    parent = named_snippet(payload, "parent")
    # A run of other code (edited since), of another input, on another device or runtime is not this
    # snippet's output.
    if run is not None and (run.code != code or run.stdin != stdin or run.device != device
                            or run.runtime != runtime):
        run = None
    check_rate("snippets", client.key, settings.SNIPPET_RATE_LIMIT_PER_HOUR, 3600, SHARED_SNIPPETS)
    return do_create_snippet(code=code, title=title, description=description, device=device, run=run,
                             runtime=runtime, parent=parent, stdin=stdin,
                             owner=user if user is not None and user.is_authenticated else None, sharer=client.person)


def named_snippet(payload: dict, field: str) -> Snippet | None:
    """The snippet a request names by its slug in ``field`` (absent: None); one that is not
    there, or that the staff removed, is a 400."""
    slug = payload.get(field)
    if slug is None:
        return None
    if not isinstance(slug, str):
        raise ActionError(_("'%(name)s' must be a snippet's slug") % {"name": field})
    snippet = Snippet.objects.filter(slug=slug, removed_at__isnull=True).first()
    if snippet is None:
        raise ActionError(_("'%(name)s' names no snippet: %(slug)s") % {"name": field, "slug": repr(slug[:60])})
    return snippet


def do_create_snippet(*, code: str, title: str, description: str, device: str, run: Run | None,
                      parent: Snippet | None, owner, sharer: str = "",
                      runtime: str = runtimes.FIRST, stdin: str = "") -> tuple[Snippet, bool]:
    """``sharer``: the person key of who shares it (the first to share this content). ``stdin``:
    its input, part of its content (the same code with another input is another link)."""
    options: dict = {}
    digest = content_hash(code, title, description, device, options, runtime, stdin)
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
                    slug=slug, content_hash=digest, code=code, stdin=stdin, title=title, description=description,
                    device=device,
                    runtime=runtime, options=options, jax_version=jax_version, jaxlib_version=jaxlib_version, run=run,
                    parent=parent, owner=owner, sharer_key=sharer[:80],
                ), True
        except IntegrityError:
            same = Snippet.objects.filter(content_hash=digest).first()
            if same is not None:  # saved by a concurrent request just now
                return same, False
            # else: another content's slug begins the same way; take a longer one
    raise ActionError(_("could not find a free link for this snippet"), status=500)


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
    """A snippet shared unrun keeps the first run of its code and input that its sharer (``who``, a
    person key) starts as its saved output. Anyone else's run of that code (a visitor of a link shared a
    moment ago) is not kept: it would become what the link shows for good, and a run its starter
    could cancel under the link."""
    Snippet.objects.filter(slug=slug, run__isnull=True, code=run.code, stdin=run.stdin, device=run.device,
                           runtime=run.runtime, sharer_key=who).update(run=run)


def do_hide_snippet(snippet: Snippet) -> None:
    """Its owner deleted it: off their list and off search engines; the link keeps working."""
    if snippet.hidden_at is None:
        Snippet.objects.filter(pk=snippet.pk).update(hidden_at=timezone.now())


# Comparisons -------------------------------------------------------------------------------------

SIDES = ("A", "B")


def check_create_comparison(payload, *, user, client: Client) -> Comparison:
    """Run the same code on two runtimes (or two devices) and keep both runs under one link.

    ``{"code", "stdin"?, "sides": [side, side], "title"?, "snippet"?, "options"?}``, a side being
    ``{"runtime", "device", "options"?, "stdin"?}`` (a new run there, with the run options of both
    sides and its own: ``{"profile": true}``) or ``{"run": <id>}`` (a run of this code that exists:
    one's own, or the saved run of ``snippet``, whose code this must be). A side reads its own
    ``stdin``, else the request's, else the snippet's input (none without a snippet); a run
    that exists must have read that same input. Every new run passes the same
    admission as ``POST /api/runs``, counted against ``client``'s person and room; when the second
    is refused, the first is not started either. The hourly limit of links counts its client key,
    as the snippets' does."""
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object"))
    code = check_code(payload.get("code"))
    title = text(payload, "title", TITLE_MAX, strip=True, unit="characters", default="")
    sides = payload.get("sides")
    if not isinstance(sides, list) or len(sides) != 2 or not all(isinstance(side, dict) for side in sides):
        raise ActionError(_('\'sides\' must be a list of two objects, each {"runtime": <id>, "device": <device>} for a '
                            'new run or {"run": <id>} for a run of this code'))
    both = check_options(payload.get("options"))
    snippet = named_snippet(payload, "snippet")
    if snippet is not None and snippet.code != code:
        raise ActionError(_("'code' is not the code of 'snippet'"))
    stdin = check_stdin(payload["stdin"]) if payload.get("stdin") is not None else (snippet.stdin if snippet else "")
    planned = [_check_side(name, side, code, user, snippet, both, stdin) for name, side in zip(SIDES, sides)]
    where = [_where(p.device, p.runtime) if isinstance(p, Run) else _where(p["device"], p["runtime"])
             for p in planned]
    if where[0] == where[1]:
        device, runtime = where[0]
        raise ActionError(_("both sides are JAX %(jax)s (%(runtime)s) on %(device)s: compare two runtimes or two "
                            "devices") % {"jax": jax_of(runtime), "runtime": runtime, "device": device})
    check_rate("comparisons", client.key, settings.SNIPPET_RATE_LIMIT_PER_HOUR, 3600, COMPARISONS)
    started: list[Run] = []
    made = False
    try:
        with transaction.atomic():
            runs = []
            for side in planned:
                if isinstance(side, Run):
                    runs.append(side)
                    continue
                run = check_start_run({"code": code, "device": side["device"], "runtime": side["runtime"],
                                       "options": side["options"], "stdin": side["stdin"]}, client=client,
                                      owner=user)
                started.append(run)
                runs.append(run)
            comparison = do_create_comparison(code=code, title=title, a=runs[0], b=runs[1], snippet=snippet,
                                              owner=user if user is not None and user.is_authenticated else None)
            made = True
        return comparison
    except BaseException:
        # Rolled back: neither run was queued; their shares go back. (Past the commit, a run
        # that could not be queued is the watchdog's, as any run's: its share goes with it.)
        if not made:
            for run in started:
                quotas.release(str(run.id))
        raise


def _where(device: str, runtime: str) -> tuple[str, str]:
    """Where a side runs, as two sides are told apart: "cpu:cpu" is the kind "cpu"."""
    kind, specific = registry.parse_device(device)
    return (kind if specific in (None, kind) else device), current(runtime)


def _check_side(name: str, side: dict, code: str, user, snippet: Snippet | None, options: dict,
                stdin: str) -> Run | dict:
    """A side as the run it names, or as where a new run goes ({device, runtime, options, stdin}),
    checked. A run that exists is one's own, or the snippet's saved run: a comparison keeps its
    runs for good, so naming someone else's would keep their run from them. ``stdin``: the
    input of a side that names none of its own."""
    if side.get("stdin") is not None:
        stdin = check_stdin(side["stdin"])
    if side.get("run") is not None:
        run = access_run_for_user(side["run"], user)
        own = run is not None and run.owner_id is not None and user is not None and run.owner_id == user.pk
        saved = run is not None and snippet is not None and snippet.run_id == run.id
        if run is None or not (own or saved):
            raise ActionError(_("side %(side)s's 'run' names no run of yours, nor the saved run of 'snippet'")
                              % {"side": name})
        if run.code != code:
            raise ActionError(_("side %(side)s's run ran other code than 'code'") % {"side": name})
        if run.stdin != stdin:
            raise ActionError(_("side %(side)s's run read another input than 'stdin'") % {"side": name})
        return run
    device = check_device(side.get("device", settings.RUN_DEFAULT_DEVICE))
    runtime, _note = check_runtime(side.get("runtime"))
    check_online(device, runtime)
    return {"device": device, "runtime": runtime, "options": {**options, **check_options(side.get("options"))},
            "stdin": stdin}


def do_create_comparison(*, code: str, title: str, a: Run, b: Run, snippet: Snippet | None, owner) -> Comparison:
    """Each comparison is new (its runs are): its slug is random, in the snippets' alphabet."""
    for _attempt in range(5):
        slug = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
        try:
            with transaction.atomic():
                return Comparison.objects.create(slug=slug, code=code, title=title, a=a, b=b, snippet=snippet,
                                                 owner=owner)
        except IntegrityError:
            continue  # 57 bits: a clash is as good as never, and another slug is drawn
    raise ActionError(_("could not find a free link for this comparison"), status=500)
