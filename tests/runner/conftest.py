"""Runner features through the real supervisor and the real bubblewrap sandbox
(``executor.local.run_local``), 8 simulated CPU devices, one cold runner per snippet.

Without bubblewrap or without root the sandboxed tests are skipped (never run unsandboxed); the
unit tests of the runner's pure functions (``test_units.py``) run anywhere. A uid range of its
own (62000+) keeps these runners apart from a worker's (60000+) and the sandbox tests' (61000+).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

UID_BASE = 62000
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    reason = None
    if not shutil.which("bwrap"):
        reason = "bubblewrap is not installed (apt-get install bubblewrap)"
    elif os.geteuid() != 0:
        reason = "the bwrap sandbox needs root (cgroups, a uid per slot)"
    if reason:
        for item in items:
            path = Path(item.fspath)
            if path.is_relative_to(HERE) and path.name != "test_units.py":
                item.add_marker(pytest.mark.skip(reason=reason))


@dataclass
class Run:
    events: list[dict]
    finished: dict = field(init=False)

    def __post_init__(self):
        self.finished = self.events[-1]
        assert self.finished["type"] == "finished", self.events

    @property
    def status(self) -> str:
        return self.finished["status"]

    @property
    def started(self) -> dict:
        return self.events[0]

    def of(self, type_: str, **match) -> list[dict]:
        return [e for e in self.events if e["type"] == type_
                and all(e.get(k) == v for k, v in match.items())]

    @property
    def stdout(self) -> str:
        return "".join(e["text"] for e in self.of("stdout"))

    @property
    def stderr(self) -> str:
        return "".join(e["text"] for e in self.of("stderr"))

    @property
    def error(self) -> dict | None:
        errors = self.of("error")
        return errors[0] if errors else None

    def __repr__(self) -> str:
        short = [{k: (v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v)
                  for k, v in e.items() if k not in ("data",)} for e in self.events]
        return f"Run({short})"


@pytest.fixture(scope="session")
def launcher():
    from executor.sandbox import Limits, get_launcher

    return get_launcher("bwrap", limits=Limits(wall_s=60), cpu_devices=8, uid_base=UID_BASE)


@pytest.fixture(scope="session")
def run(launcher):
    """run(code, options=None) -> Run, through the real supervisor in the real sandbox."""
    from executor.local import run_local

    def run_(code: str, options: dict | None = None) -> Run:
        return Run(run_local(code, launcher=launcher, options=options))

    return run_
