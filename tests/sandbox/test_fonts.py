"""matplotlib's font list, built once per worker in a sandbox and copied into every run: a run's
first figure does not scan the fonts again."""

from __future__ import annotations

import json

import pytest

from executor.runner import fonts
from executor.sandbox import get_launcher
from executor.sandbox.bwrap import FONT_CACHE_DIR

from .conftest import LIMITS, UID_BASE

PROBE = """\
import json, os, time
folder = os.environ["MPLCONFIGDIR"]
def listing():
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in names if name.endswith(".json")}
before = listing()
import matplotlib.font_manager as fm
after = listing()
print(json.dumps({"before": before, "after": after,
                  "font": os.path.basename(fm.findfont("DejaVu Sans", fallback_to_default=False))}))
"""


@pytest.fixture(scope="module")
def prepared():
    launcher = get_launcher("bwrap", limits=LIMITS, uid_base=UID_BASE)
    launcher.prepare()
    return launcher


def test_the_worker_builds_the_font_list_inside_a_sandbox(prepared):
    assert prepared.font_cache == "/opt/playground/matplotlib"
    [cache] = [p for p in FONT_CACHE_DIR.iterdir() if fonts.CACHE_NAME.fullmatch(p.name)]
    listed = json.loads(cache.read_text())
    paths = [entry["fname"] for entry in listed["ttflist"]]
    # matplotlib's own fonts, stored relative to its data folder: valid in every sandbox.
    assert "fonts/ttf/DejaVuSans.ttf" in paths
    assert oct(cache.stat().st_mode & 0o777) == "0o644"


def test_a_run_finds_the_font_list_and_matplotlib_uses_it_as_is(prepared, run):
    from executor.local import RunResult, run_local

    result = RunResult(run_local(PROBE, launcher=prepared, limits=LIMITS))
    assert result.status == "succeeded", result.stderr
    seen = json.loads(result.stdout)
    [name] = seen["before"]
    assert fonts.CACHE_NAME.fullmatch(name)
    assert seen["after"] == seen["before"]  # read, not rebuilt
    assert seen["font"] == "DejaVuSans.ttf"


def test_without_a_prepared_list_a_run_builds_its_own(run):
    result = run(PROBE)
    assert result.status == "succeeded", result.stderr
    seen = json.loads(result.stdout)
    assert seen["before"] == {}
    assert list(seen["after"]) and seen["font"] == "DejaVuSans.ttf"


def test_install_copies_only_font_lists(tmp_path, monkeypatch):
    source = tmp_path / "source"
    source.mkdir()
    (source / "fontlist-v3.11.0.json").write_text("{}")
    (source / "matplotlibrc").write_text("backend: agg")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "config"))
    fonts.install(str(source))
    assert sorted(p.name for p in (tmp_path / "config").iterdir()) == ["fontlist-v3.11.0.json"]
    fonts.install(str(tmp_path / "missing"))  # no prepared list: nothing to do, no error
