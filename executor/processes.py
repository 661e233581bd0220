"""What a pid says about its process, for code that finds pids in files it keeps (a cgroup's
owner, the metrics folder's dead processes, the multi-host suite's leftover hosts)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts: it cannot be signalled,
    but it is there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
