"""Runner features through the real supervisor and the real bubblewrap sandbox
(``executor.local.run_local``), 8 simulated CPU devices, one cold runner per snippet.

Without bubblewrap or without root the sandboxed tests are skipped (never run unsandboxed); the
unit tests of the runner's pure functions (``test_units.py``) run anywhere. A uid range of its
own (62000+) keeps these runners apart from a worker's (60000+) and the sandbox tests' (61000+).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.local import RunResult
from tests.sandboxed import skip_unless_sandbox

UID_BASE = 62000
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    skip_unless_sandbox(items, HERE, keep=("test_units.py",))


Run = RunResult


@pytest.fixture(scope="session")
def launcher():
    from executor.sandbox import Limits, get_launcher

    from tests.conftest import sandbox_backend

    launcher = get_launcher(sandbox_backend(), limits=Limits(wall_s=60), cpu_devices=8, uid_base=UID_BASE)
    yield launcher
    launcher.close()


@pytest.fixture(scope="session")
def run(launcher):
    """run(code, options=None) -> Run, through the real supervisor in the real sandbox."""
    from executor.local import run_local

    def run_(code: str, options: dict | None = None) -> Run:
        return Run(run_local(code, launcher=launcher, options=options))

    return run_
