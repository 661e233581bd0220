"""Who may see which notebook. A person's own notebook is theirs alone: anyone else, signed out
included, is told it is not there (never "forbidden"). A shared notebook is a link, meant to be
pasted anywhere: anyone who has it may open it."""

from __future__ import annotations

import uuid

from .models import Notebook, SharedNotebook


def access_own_notebook(notebook_id, user) -> Notebook | None:
    """The user's notebook of that id, or None (no such id, someone else's, or signed out)."""
    if user is None or not user.is_authenticated:
        return None
    try:
        key = uuid.UUID(str(notebook_id))
    except ValueError:
        return None
    return Notebook.objects.select_related("forked_from").filter(pk=key, owner=user).first()


def access_own_notebooks(user):
    """A signed-in person's notebooks, the last saved first."""
    return Notebook.objects.filter(owner=user).order_by("-updated_at")


def access_shared_notebook(slug) -> SharedNotebook | None:
    if not isinstance(slug, str) or not slug.isalnum() or len(slug) > 32:
        return None
    return SharedNotebook.objects.filter(slug=slug).first()
