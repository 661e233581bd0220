"""Runner features through the real supervisor and the real bubblewrap sandbox
(``executor.local.run_local``), 8 simulated CPU devices, one cold runner per snippet.

``RUNNER_TEST_RUNTIME=jax-0.4.38`` runs the whole suite on another runtime's environment (its
own JAX; ``python -m executor.runtimes build`` first); ``test_runtimes.py`` runs its contract on
every runtime whatever this says.

Without bubblewrap or without root the sandboxed tests are skipped (never run unsandboxed); the
unit tests of the runner's pure functions (``test_units.py``) and of its profiles
(``test_xspace.py``, ``test_profile_trace.py``, which run each runtime's JAX outside the sandbox)
run anywhere. A uid range of its own (62000+) keeps these runners apart from a worker's (60000+)
and the sandbox tests' (61000+).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from executor.local import RunResult
from executor.sandbox import Launcher
from tests.sandboxed import skip_unless_sandbox

# Every runner these tests start ends at a message the protocol does not declare (runner/main.py's
# EventChannel), as the executor's do under EXECUTOR_CHECK_PROTOCOL.
Launcher.check_protocol = True

UID_BASE = 62000
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    skip_unless_sandbox(items, HERE, keep=("test_units.py", "test_xspace.py", "test_profile_trace.py",
                                               "test_explanation_catalogue.py"))


Run = RunResult


@pytest.fixture(scope="session")
def launcher():
    from executor.sandbox import Limits, get_launcher

    from tests.conftest import sandbox_backend

    from executor import runtimes

    chosen = os.environ.get("RUNNER_TEST_RUNTIME")
    venv = str(runtimes.environment(runtimes.catalog().resolve(chosen)[0])) if chosen else None
    launcher = get_launcher(sandbox_backend(), limits=Limits(wall_s=60), cpu_devices=8, uid_base=UID_BASE,
                            **({"venv": venv} if venv else {}))
    yield launcher
    launcher.close()


@pytest.fixture(scope="session")
def run(launcher):
    """run(code, options=None) -> Run, through the real supervisor in the real sandbox."""
    from executor.local import run_local

    def run_(code: str, options: dict | None = None) -> Run:
        return Run(run_local(code, launcher=launcher, options=options))

    return run_
