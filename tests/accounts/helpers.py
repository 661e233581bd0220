"""What the account tests share: a password, and snippets and tokens made as the site makes them."""

from __future__ import annotations

import re

TOKEN_RE = re.compile(r"jpg_[A-Za-z0-9_-]{43}")


def share(owner, code: str, title: str = "", description: str = ""):
    """A snippet as POST /api/snippets saves it."""
    from snippets.actions import do_create_snippet

    snippet, _ = do_create_snippet(code=code, title=title, description=description, device="cpu", run=None,
                                   parent=None, owner=owner)
    return snippet


def make_token(user, name: str = "script") -> str:
    from accounts.actions import do_create_token

    _, secret = do_create_token(user, name)
    return secret


def bearer(secret: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
