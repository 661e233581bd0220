"""JSON shapes of snippets in the public API."""

from __future__ import annotations

from playground.runtimes import current, jax_of
from playground.serializers import run_detail, run_summary

from . import markdown
from .actions import SIDES
from .models import Comparison, Snippet

FORKS_LISTED = 50


def snippet_summary(snippet: Snippet) -> dict:
    return {
        "slug": snippet.slug,
        "url": snippet.get_absolute_url(),
        "title": snippet.title,
        "device": snippet.device,
        "runtime": snippet.runtime,
        "created_at": snippet.created_at.isoformat(),
        "first_line": next((line for line in snippet.code.splitlines() if line.strip()), "")[:120],
    }


def snippet_detail(snippet: Snippet, *, events_after: int = 0, events_limit: int = 1000) -> dict:
    base = snippet.get_absolute_url()
    forks = snippet.forks.filter(hidden_at__isnull=True, removed_at__isnull=True).order_by("created_at")
    return {
        **snippet_summary(snippet),
        "code": snippet.code,
        "stdin": snippet.stdin,
        "description": snippet.description,
        "description_html": markdown.render(snippet.description),
        "options": snippet.options,
        "jax_version": snippet.jax_version or None,
        "jaxlib_version": snippet.jaxlib_version or None,
        "owner": snippet.owner.username if snippet.owner_id else None,
        "parent": snippet_summary(snippet.parent) if snippet.parent_id else None,
        "forks": [snippet_summary(f) for f in forks[:FORKS_LISTED]],
        "forks_count": forks.count(),
        "run": run_detail(snippet.run, after=events_after, limit=events_limit) if snippet.run_id else None,
        "links": {"page": base, "py": f"{base}.py", "ipynb": f"{base}.ipynb", "json": f"{base}.json",
                  "embed": f"/embed/{snippet.slug}"},
    }


def comparison_detail(comparison: Comparison) -> dict:
    """A comparison and where each of its two runs is (their events: GET /api/runs/<id>, or the
    run's websocket while it goes on)."""
    return {
        "slug": comparison.slug,
        "url": comparison.get_absolute_url(),
        "title": comparison.title,
        "code": comparison.code,
        "created_at": comparison.created_at.isoformat(),
        "snippet": snippet_summary(comparison.snippet) if comparison.snippet_id else None,
        "sides": [{
            "name": name,
            "label": side_label(run),
            "device": run.device,
            "runtime": run.runtime,
            "jax": jax_of(current(run.runtime)),
            "saved": comparison.snippet_id is not None and comparison.snippet.run_id == run.id,
            "stdin": run.stdin,
            "run": {**run_summary(run), "wall_ms": run.wall_ms, "finished_at": run.finished_at.isoformat()
                    if run.finished_at else None},
        } for name, run in zip(SIDES, comparison.sides)],
    }


def side_label(run) -> str:
    """How a page names a comparison's side: "JAX 0.4.38 · CPU"."""
    return f"JAX {jax_of(current(run.runtime))} · {run.device.upper()}"
