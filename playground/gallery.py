"""The examples gallery: ``playground/examples/NN-slug.py`` files, each opening with a docstring
whose first line is the title and the rest a short description. Loaded once per process (they
ship with the code) and given to the page in its language: the files themselves are the English,
and ``examples/<language>/NN-slug.py`` is the same example for a reader of another language: the
same code, token for token, with its docstrings and comments translated (so its title and
description are its own docstring's). tests/runner/test_gallery_languages.py holds the twins to
that, and runs both."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from functools import lru_cache
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def _read(path: Path) -> dict:
    code = path.read_text(encoding="utf-8")
    doc = leading_docstring(code) or path.stem
    title, _sep, description = doc.partition("\n")
    slug = path.stem.split("-", 1)[-1]
    return {"slug": slug, "title": title.strip(), "description": _join_lines(description), "code": code}


def _join_lines(text: str) -> str:
    """A docstring's wrapped lines as one paragraph: a space where English words meet, none
    between two Chinese characters (a space there reads as a gap in the sentence)."""
    out = ""
    for line in (line.strip() for line in text.strip().splitlines()):
        if out and line:
            out += "" if _wide(out[-1]) and _wide(line[0]) else " "
        out += line
    return out


def _wide(char: str) -> bool:
    return ord(char) >= 0x2E80


@lru_cache(maxsize=1)
def _examples() -> tuple[dict, ...]:
    return tuple(_read(path) for path in sorted(EXAMPLES_DIR.glob("*.py")))


@lru_cache(maxsize=8)
def translations(language: str) -> dict[str, dict]:
    """Each example in ``language`` by slug: its title, description and commented code (none for
    English, or a language the gallery has no folder for)."""
    folder = EXAMPLES_DIR / language
    if not language or language.startswith((".", "_")) or not folder.is_dir():
        return {}
    return {example["slug"]: example for example in map(_read, sorted(folder.glob("*.py")))}


def examples(language: str | None = None) -> list[dict]:
    """Every example, in ``language`` where the gallery has it (else the English)."""
    twins = translations(language) if language else {}
    return [twins.get(example["slug"], example) for example in _examples()]


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
