"""Who may see which snippet. Anyone with a link may: links are meant to be pasted anywhere. A
snippet staff removed answers as removed; one its owner deleted still answers (it is only off
lists and search engines)."""

from __future__ import annotations

from .models import Snippet


def access_snippet_for_user(slug, user) -> Snippet | None:
    """A snippet (removed ones included: callers say so), or None when there is none."""
    if not isinstance(slug, str) or not slug.isalnum():
        return None
    return Snippet.objects.select_related("parent", "run", "owner").filter(slug=slug).first()


def access_own_snippets(user):
    """The snippets a signed-in person shared and has not deleted."""
    return Snippet.objects.filter(owner=user, hidden_at__isnull=True, removed_at__isnull=True)
