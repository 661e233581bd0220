"""The examples gallery: ``playground/examples/NN-slug.py`` files, each opening with a docstring
whose first line is the title and the rest a short description. Loaded once per process (they
ship with the code) and given to the page in its language: the docstrings are the English, and
``examples/<language>.json`` holds each example's title and description in another
(``{slug: {"title", "description"}}``); the code is the same in every language."""

from __future__ import annotations

import ast
import inspect
import io
import json
import tokenize
from functools import lru_cache
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


@lru_cache(maxsize=1)
def _examples() -> tuple[dict, ...]:
    out = []
    for path in sorted(EXAMPLES_DIR.glob("*.py")):
        code = path.read_text()
        doc = leading_docstring(code) or path.stem
        title, _sep, description = doc.partition("\n")
        slug = path.stem.split("-", 1)[-1]
        out.append({"slug": slug, "title": title.strip(), "description": description.strip(), "code": code})
    return tuple(out)


@lru_cache(maxsize=8)
def translations(language: str) -> dict[str, dict]:
    """The titles and descriptions in ``language`` by slug (none for English, or a language the
    gallery has no file for)."""
    known = {path.stem: path for path in EXAMPLES_DIR.glob("*.json")}
    if language not in known:
        return {}
    return json.loads(known[language].read_text(encoding="utf-8"))


def examples(language: str | None = None) -> list[dict]:
    """Every example, its title and description in ``language`` where the gallery has them."""
    twins = translations(language) if language else {}
    out = []
    for example in _examples():
        twin = twins.get(example["slug"], {})
        out.append({**example, **{key: twin[key] for key in ("title", "description") if twin.get(key)}})
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
