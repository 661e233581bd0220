"""matplotlib's font list, built once per worker rather than in every run.

matplotlib scans its fonts and caches what it found in ``MPLCONFIGDIR/fontlist-v<version>.json``.
A runner's ``/tmp`` is new for each run, so without help every run's first ``import
matplotlib.pyplot`` would scan the fonts again. Instead the worker runs ``python -m runner.fonts``
once, inside a sandbox like a run's (so the list holds exactly the fonts a run can see), keeps
what it prints, and binds it read-only into every sandbox; each runner copies it into its own
``MPLCONFIGDIR`` during warm-up (``install``), before the snippet is known. Only the list of the
matplotlib the worker runs is bound: a host may hold others' (other versions, other workers).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

# What a cache file may be called: only this is ever written or copied.
CACHE_NAME = re.compile(r"fontlist-v[0-9A-Za-z.]+\.json")


def config_dir() -> str:
    """Where matplotlib keeps its config and cache in a run: the run's private /tmp."""
    return os.environ.get("MPLCONFIGDIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "matplotlib")


def build() -> dict:
    """Build the font list as a run would, and return {"name", "text"} of its cache file."""
    os.environ["MPLCONFIGDIR"] = config_dir()
    import matplotlib
    import matplotlib.font_manager as fm

    name = f"fontlist-v{fm.FontManager.__version__}.json"
    with open(os.path.join(matplotlib.get_cachedir(), name), encoding="utf-8") as f:
        return {"name": name, "text": f.read()}


def install(cache_file: str | None) -> None:
    """Copy the worker's prepared font list into this run's matplotlib folder (no matplotlib
    import: a run that never draws pays one small file copy)."""
    if not cache_file or not CACHE_NAME.fullmatch(os.path.basename(cache_file)):
        return
    if not os.path.isfile(cache_file):
        return
    target = config_dir()
    os.makedirs(target, exist_ok=True)
    shutil.copyfile(cache_file, os.path.join(target, os.path.basename(cache_file)))


if __name__ == "__main__":
    json.dump(build(), sys.stdout)
