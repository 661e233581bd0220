"""Who may see which snippet. Anyone with a link may: links are meant to be pasted anywhere. A
snippet staff removed answers as removed; one its owner deleted still answers (it is only off
lists and search engines)."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext as _

from web.errors import ActionError

from .models import Comparison, Snippet


def access_snippet_for_user(slug, user) -> Snippet | None:
    """A snippet (removed ones included: callers say so), or None when there is none."""
    if not isinstance(slug, str) or not slug.isalnum():
        return None
    return Snippet.objects.select_related("parent", "run", "owner").filter(slug=slug).first()


def access_comparison(slug, user) -> Comparison | None:
    """A comparison, or None. Like a snippet's, its link is meant to be pasted anywhere."""
    if not isinstance(slug, str) or not slug.isalnum():
        return None
    return Comparison.objects.select_related("a", "b", "snippet").filter(slug=slug).first()


def access_own_snippets(user, q: str = ""):
    """The snippets a signed-in person shared and has not deleted, newest first; ``q`` searches
    their titles, descriptions and code (or names a slug)."""
    snippets = Snippet.objects.filter(owner=user, hidden_at__isnull=True, removed_at__isnull=True)
    q = q.strip()
    if q:
        snippets = snippets.filter(Q(title__icontains=q) | Q(description__icontains=q) | Q(code__icontains=q)
                                   | Q(slug=q))
    return snippets.order_by("-created_at")


def check_may_cancel(run, who: str) -> None:
    """A run a snippet keeps as its saved output, or a comparison as one of its sides, may be
    cancelled only by whoever started it (``who``: the caller's person key; the starter's is kept
    with the run's share while it is queued or running), or its owner: a visitor of the link, who
    sees the run's id, must not cut the output short for everyone who opens it later. Other
    runs: anyone holding the id."""
    if not (Snippet.objects.filter(run=run).exists() or Comparison.objects.filter(Q(a=run) | Q(b=run)).exists()):
        return
    from playground import quotas

    starter = quotas.client_of(str(run.id))
    if who == starter or (run.owner_id is not None and who == f"user:{run.owner_id}"):
        return
    if Snippet.objects.filter(run=run).exists():
        raise ActionError(_("this run is the saved output of a shared snippet: only whoever started it may cancel it"),
                          status=403)
    raise ActionError(_("this run is a side of a comparison: only whoever started it may cancel it"), status=403)
