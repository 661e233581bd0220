"""Who may see what. Views and consumers call these and nothing else: an outsider gets "not
found", never "forbidden", so a response never confirms that an object exists."""

from __future__ import annotations

import uuid

from .models import Run


def access_run_for_user(run_id, user) -> Run | None:
    """A run, or None when it does not exist or the user may not see it. Runs are reachable by
    anyone who holds their id (an unguessable UUID), like a shared link."""
    try:
        run_uuid = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return Run.objects.filter(id=run_uuid).first()
