"""matplotlib's font list, built once per worker in a sandbox and copied into every run: a run's
first figure does not scan the fonts again."""

from __future__ import annotations

import json
import os

import pytest

from executor.local import RunResult, run_local
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
    name = os.path.basename(prepared.font_cache)
    assert prepared.font_cache == f"/opt/playground/matplotlib/{name}" and fonts.CACHE_NAME.fullmatch(name)
    cache = FONT_CACHE_DIR / name
    listed = json.loads(cache.read_text())
    paths = [entry["fname"] for entry in listed["ttflist"]]
    # matplotlib's own fonts, stored relative to its data folder: valid in every sandbox.
    assert "fonts/ttf/DejaVuSans.ttf" in paths
    assert oct(cache.stat().st_mode & 0o777) == "0o644"


def test_a_run_finds_the_font_list_and_matplotlib_uses_it_as_is(prepared, run):
    result = RunResult(run_local(PROBE, launcher=prepared, limits=LIMITS))
    assert result.status == "succeeded", result.stderr
    seen = json.loads(result.stdout)
    [name] = seen["before"]
    assert fonts.CACHE_NAME.fullmatch(name)
    assert seen["after"] == seen["before"]  # read, not rebuilt
    assert seen["font"] == "DejaVuSans.ttf"


def test_without_a_prepared_list_a_run_builds_its_own(run, launcher):
    result = run(PROBE)
    assert result.status == "succeeded", result.stderr
    seen = json.loads(result.stdout)
    assert seen["before"] == {}
    assert seen["font"] == "DejaVuSans.ttf"
    if launcher.name == "fork":
        assert seen["after"] == {}  # the template loaded pyplot, and with it the fonts, once
    else:
        assert list(seen["after"])  # scanned and written by the run itself


def test_only_this_matplotlib_s_list_reaches_a_run_and_a_vanished_one_is_done_without(prepared):
    other = FONT_CACHE_DIR / "fontlist-v0.0.1.json"  # another worker's, another version
    other.write_text("{}")
    try:
        result = RunResult(run_local(PROBE, launcher=prepared, limits=LIMITS))
        assert list(json.loads(result.stdout)["before"]) == [os.path.basename(prepared.font_cache)]
    finally:
        other.unlink()

    launcher = get_launcher("bwrap", limits=LIMITS, uid_base=UID_BASE)
    launcher.font_cache = "/opt/playground/matplotlib/fontlist-v0.0.2.json"  # not on the host
    result = RunResult(run_local(PROBE, launcher=launcher, limits=LIMITS))
    assert result.status == "succeeded", result.stderr
    assert launcher.font_cache is None and json.loads(result.stdout)["before"] == {}


def test_install_copies_the_named_font_list_and_nothing_else(tmp_path, monkeypatch):
    source = tmp_path / "fontlist-v3.11.0.json"
    source.write_text("{}")
    (tmp_path / "matplotlibrc").write_text("backend: agg")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "config"))
    fonts.install(str(tmp_path / "matplotlibrc"))  # not a font list: ignored
    assert not (tmp_path / "config").exists()
    fonts.install(str(source))
    assert sorted(p.name for p in (tmp_path / "config").iterdir()) == ["fontlist-v3.11.0.json"]
    fonts.install(str(tmp_path / "fontlist-v9.json"))  # missing: nothing to do, no error
