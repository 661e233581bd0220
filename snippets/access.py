"""Who may see which snippet. Anyone with a link may: links are meant to be pasted anywhere. A
snippet staff removed answers as removed; one its owner deleted still answers (it is only off
lists and search engines)."""

from __future__ import annotations

from django.db.models import Q

from .models import Snippet


def access_snippet_for_user(slug, user) -> Snippet | None:
    """A snippet (removed ones included: callers say so), or None when there is none."""
    if not isinstance(slug, str) or not slug.isalnum():
        return None
    return Snippet.objects.select_related("parent", "run", "owner").filter(slug=slug).first()


def access_own_snippets(user, q: str = ""):
    """The snippets a signed-in person shared and has not deleted, newest first; ``q`` searches
    their titles, descriptions and code (or names a slug)."""
    snippets = Snippet.objects.filter(owner=user, hidden_at__isnull=True, removed_at__isnull=True)
    q = q.strip()
    if q:
        snippets = snippets.filter(Q(title__icontains=q) | Q(description__icontains=q) | Q(code__icontains=q)
                                   | Q(slug=q))
    return snippets.order_by("-created_at")
