"""The figures docs/BENCHMARKS.md records for a benchmark, so that each run prints what it
measured beside them and the next change sees at once what it cost.

A benchmark's recorded figures are a table in docs/BENCHMARKS.md between two markers:

    <!-- recorded: bench.stages -->
    | figure | recorded |
    |---|---:|
    | print(1) total ms | 24.1 |
    <!-- /recorded -->

``beside(bench, figure, value)`` is the value with the recorded one and their ratio; a figure not
recorded (yet) says so."""

from __future__ import annotations

import re
from functools import cache

from bench.stack import ROOT

DOC = ROOT / "docs" / "BENCHMARKS.md"
_BLOCK = re.compile(r"<!-- recorded: (?P<bench>[\w.]+) -->\n(?P<table>.*?)<!-- /recorded -->", re.S)
_ROW = re.compile(r"^\|\s*`?(?P<figure>[^|`]+?)`?\s*\|\s*(?P<value>-?[\d.]+)\s*\|\s*$", re.M)


@cache
def recorded(bench: str) -> dict[str, float]:
    """{figure: value} of ``bench``'s table (empty when it has none)."""
    try:
        text = DOC.read_text()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for block in _BLOCK.finditer(text):
        if block["bench"] == bench:
            out.update({row["figure"]: float(row["value"]) for row in _ROW.finditer(block["table"])})
    return out


def beside(bench: str, figure: str, value: float, digits: int = 1) -> str:
    """``value``, then the recorded figure and the ratio: "23.9 (recorded 24.1, 0.99×)"."""
    was = recorded(bench).get(figure)
    if was is None:
        return f"{value:.{digits}f} (not recorded)"
    ratio = f"{value / was:.2f}×" if was else "-"
    return f"{value:.{digits}f} (recorded {was:.{digits}f}, {ratio})"


def table(bench: str, figures: dict[str, float], digits: int = 1) -> str:
    """The Markdown block to paste into docs/BENCHMARKS.md to record ``figures``."""
    rows = "\n".join(f"| `{name}` | {value:.{digits}f} |" for name, value in figures.items())
    return f"<!-- recorded: {bench} -->\n| figure | recorded |\n|---|---:|\n{rows}\n<!-- /recorded -->"


def report(bench: str, figures: dict[str, float], digits: int = 1) -> None:
    """Each figure measured beside the one recorded (the benchmarks' last lines)."""
    print(f"\nbeside docs/BENCHMARKS.md ({bench}):")
    for name, value in figures.items():
        print(f"  {name:<44} {beside(bench, name, value, digits)}")
