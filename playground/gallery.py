"""The examples gallery: ``playground/examples/NN-slug.py`` files, each opening with a docstring
whose first line is the title and the rest a short description. Loaded once per process (they
ship with the code) and given to the page."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


@lru_cache(maxsize=1)
def examples() -> list[dict]:
    out = []
    for path in sorted(EXAMPLES_DIR.glob("*.py")):
        code = path.read_text()
        doc = ast.get_docstring(ast.parse(code)) or path.stem
        title, _, description = doc.partition("\n")
        slug = path.stem.split("-", 1)[-1]
        out.append({"slug": slug, "title": title.strip(), "description": description.strip(), "code": code})
    return out
