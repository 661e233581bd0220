"""Who may see what. Views and consumers call these and nothing else: an outsider gets "not
found", never "forbidden", so a response never confirms that an object exists."""

from __future__ import annotations

import uuid

from .models import Run


# Apps above this one that keep some runs to a few people (an assignment's validation runs carry
# its hidden reference solution): each says, of a run and a user, False to refuse, else None.
_RUN_GUARDS: list = []


def guard_runs(guard):
    """Register ``guard(run, user) -> False | None`` (at an app's start)."""
    _RUN_GUARDS.append(guard)
    return guard


def access_run_for_user(run_id, user) -> Run | None:
    """A run, or None when it does not exist or the user may not see it. Runs are reachable by
    anyone who holds their id (an unguessable UUID), like a shared link, unless a guard keeps
    one to fewer people."""
    try:
        run_uuid = uuid.UUID(str(run_id))
    except ValueError:
        return None
    run = Run.objects.filter(id=run_uuid).first()
    if run is not None and any(guard(run, user) is False for guard in _RUN_GUARDS):
        return None
    return run


def access_session(session_id, person: str):
    """The session, for the person who made it (``web.clients``' person key) and nobody else:
    None as if it did not exist."""
    import uuid as uuid_

    from .models import Session

    try:
        key = uuid_.UUID(str(session_id))
    except ValueError:
        return None
    return Session.objects.filter(id=key, client=person).first()
