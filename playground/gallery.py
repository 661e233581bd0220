"""The examples gallery: ``playground/examples/NN-slug.py`` files, each opening with a docstring
whose first line is the title and the rest a short description. Loaded once per process (they
ship with the code) and given to the page."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from functools import lru_cache
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


@lru_cache(maxsize=1)
def examples() -> list[dict]:
    out = []
    for path in sorted(EXAMPLES_DIR.glob("*.py")):
        code = path.read_text()
        doc = leading_docstring(code) or path.stem
        title, _, description = doc.partition("\n")
        slug = path.stem.split("-", 1)[-1]
        out.append({"slug": slug, "title": title.strip(), "description": description.strip(), "code": code})
    return out


def leading_docstring(code: str) -> str | None:
    """The string the file opens with, cleaned as ``ast.get_docstring`` would. Only that is
    parsed: the rest may hold notebook lines (``%timeit``) that are Python only once the
    runner has rewritten them."""
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
            continue
        if token.type == tokenize.STRING:
            return inspect.cleandoc(ast.literal_eval(token.string))
        return None
    return None
