"""Shared by the test folders whose snippets run in the real sandbox."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def sandbox_unavailable() -> str | None:
    """Why the bwrap sandbox cannot run here, or None."""
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if os.geteuid() != 0:
        return "the bwrap sandbox needs root (cgroups, a uid per slot)"
    return None


def skip_unless_sandbox(items, folder: Path, keep: tuple[str, ...] = ()) -> None:
    """Skip the tests under ``folder`` (but files named in ``keep``) where the sandbox cannot
    run: their snippets never run unsandboxed."""
    reason = sandbox_unavailable()
    if not reason:
        return
    for item in items:
        path = Path(item.fspath)
        if path.is_relative_to(folder) and path.name not in keep:
            item.add_marker(pytest.mark.skip(reason=reason))
