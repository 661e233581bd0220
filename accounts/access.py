"""What of their own a signed-in person may manage: their tokens and their runs. Another person's
token or run is "not found", never "forbidden"."""

from __future__ import annotations

import uuid

from playground.models import Run

from .models import ApiToken, Draft


def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def access_own_tokens(user):
    return ApiToken.objects.filter(user=user)


def access_own_token(user, token_id) -> ApiToken | None:
    token_uuid = _uuid(token_id)
    return None if token_uuid is None else access_own_tokens(user).filter(id=token_uuid).first()


def access_own_runs(user):
    """The runs a signed-in person started (runs started anonymously belong to no one)."""
    return Run.objects.filter(owner=user)


def access_own_run(user, run_id) -> Run | None:
    run_uuid = _uuid(run_id)
    return None if run_uuid is None else access_own_runs(user).filter(id=run_uuid).first()


def access_own_drafts(user):
    return Draft.objects.filter(user=user)


def access_own_draft(user, key: str) -> Draft | None:
    return access_own_drafts(user).filter(key=key).first()
