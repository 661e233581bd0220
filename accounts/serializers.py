"""JSON shapes of accounts' objects in the public API. A token's secret is never among them: it
is shown once, by the call that makes it."""

from __future__ import annotations

from .models import ApiToken, Draft


def token_summary(token: ApiToken) -> dict:
    return {
        "id": str(token.id),
        "name": token.name,
        "prefix": token.prefix,
        "created_at": token.created_at.isoformat(),
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
    }


def draft_detail(draft: Draft) -> dict:
    return {"key": draft.key, "title": draft.title, "code": draft.code, "updated_at": draft.updated_at.isoformat()}
