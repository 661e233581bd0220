"""The front end's catalogues: every key the code asks for has a Chinese translation with the same
placeholders, no translation is left that no code asks for, and no text a person reads is written
in a .ts file outside t()/tn().

Keys are read from the source as the code writes them: the first argument of ``t("…")``, the
two of ``tn("…", "…", n)``, ``context|English`` of ``tc("context", "English")``. An error's
explanation is looked up by its template (written in the runner, executor/runner/explain.py, and
in executor/events.py), so explanations.json is held to those by
tests/runner/test_explanation_catalogue.py instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "frontend" / "src"
CATALOGUES = SRC / "i18n" / "zh-hans"
# The translation layer itself, and the file generated from the runner's protocol.
NOT_SCANNED = {"i18n.ts", "protocol.gen.ts", "explanations.ts"}

STRING = r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
CALL_T = re.compile(r"(?<![\w.$])t\(\s*" + STRING)
CALL_TN = re.compile(r"(?<![\w.$])tn\(\s*" + STRING + r"\s*,\s*" + STRING)
CALL_TC = re.compile(r"(?<![\w.$])tc\(\s*" + STRING + r"\s*,\s*" + STRING)
ANY_CALL = re.compile(r"(?<![\w.$])t[nc]?\(\s*(?=[^\s)])")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def literal(token: str) -> str:
    body = token[1:-1]
    if token[0] == "'":
        body = body.replace('\\"', '"').replace("\\'", "'").replace('"', '\\"')
    return json.loads(f'"{body}"')


def sources() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.ts")) if p.name not in NOT_SCANNED]


def keys_in_code() -> dict[str, list[str]]:
    """Each key the code asks for, and where (file:line)."""
    keys: dict[str, list[str]] = {}
    for path in sources():
        text = path.read_text()
        for match in CALL_T.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            keys.setdefault(literal(match.group(1)), []).append(f"{path.relative_to(SRC)}:{line}")
        for match in CALL_TN.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            # Chinese has one form: the plural's key.
            keys.setdefault(literal(match.group(2)), []).append(f"{path.relative_to(SRC)}:{line}")
        for match in CALL_TC.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            key = f"{literal(match.group(1))}|{literal(match.group(2))}"
            keys.setdefault(key, []).append(f"{path.relative_to(SRC)}:{line}")
    return keys


def catalogue() -> dict[str, tuple[str, str]]:
    """Every zh-hans translation: key -> (translation, fragment)."""
    merged: dict[str, tuple[str, str]] = {}
    for path in sorted(CATALOGUES.glob("*.json")):
        for key, value in json.loads(path.read_text()).items():
            merged[key] = (value, path.name)
    return merged


def test_every_call_names_its_key_as_a_literal():
    """A key built at run time cannot be checked (nor found by a translator)."""
    dynamic = []
    for path in sources():
        text = path.read_text()
        for match in ANY_CALL.finditer(text):
            rest = text[match.end():]
            if not rest.startswith(('"', "'")):
                line = text.count("\n", 0, match.start()) + 1
                dynamic.append(f"{path.relative_to(SRC)}:{line}: {text[match.start():match.start() + 60]!r}")
    assert dynamic == [], "t()/tn() called with a key that is not a string literal:\n" + "\n".join(dynamic)


def test_every_key_has_a_chinese_translation_with_the_same_placeholders():
    known = catalogue()
    missing = [f"{key!r} ({', '.join(where[:2])})" for key, where in sorted(keys_in_code().items()) if key not in known]
    assert missing == [], f"{len(missing)} texts have no Chinese translation:\n" + "\n".join(missing)
    differ = [f"{key!r} -> {known[key][0]!r}" for key in keys_in_code()
              if set(PLACEHOLDER.findall(key)) != set(PLACEHOLDER.findall(known[key][0]))]
    assert differ == [], "placeholders differ between English and Chinese:\n" + "\n".join(differ)


def test_no_translation_is_empty_or_left_in_english():
    left = [f"{fragment}: {key!r}" for key, (value, fragment) in catalogue().items()
            if not value.strip() or (value == key and re.search(r"[A-Za-z]{3}", key))]
    assert left == [], "translations that are empty or the English itself:\n" + "\n".join(left)


def test_no_fragment_holds_a_key_no_code_asks_for():
    used = keys_in_code()
    unused = [f"{fragment}: {key!r}" for key, (_, fragment) in catalogue().items()
              if key not in used and fragment != "explanations.json"]
    assert unused == [], "translations no code asks for (remove them, or the code lost a t()):\n" + "\n".join(unused)


def test_no_key_is_translated_twice_differently():
    seen: dict[str, tuple[str, str]] = {}
    clashes = []
    for path in sorted(CATALOGUES.glob("*.json")):
        for key, value in json.loads(path.read_text()).items():
            if key in seen and seen[key][0] != value:
                clashes.append(f"{key!r}: {seen[key][1]} says {seen[key][0]!r}, {path.name} says {value!r}")
            seen.setdefault(key, (value, path.name))
    assert clashes == [], "\n".join(clashes)


# A person-facing text written outside t(): a capitalised phrase of words, as labels and sentences
# are, handed to the DOM (textContent, title, aria-label, placeholder, el()'s children, announce()).
SHOWN = re.compile(
    r"(?:textContent\s*=|innerText\s*=|\.title\s*=|placeholder\s*=|setAttribute\(\s*\"(?:aria-label|title|placeholder"
    r"|aria-description)\"\s*,|announce\(|confirm\(|alert\(|el\(\s*\"[\w-]+\"\s*,\s*(?:\"[^\"]*\"|null|undefined)\s*,)"
    r"\s*" + STRING)
PROSE = re.compile(r"^[A-Z][a-z]+(?:[ -][A-Za-z’']+)*[.…:!?]?$|\s[a-z]+\s")


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_text_a_person_reads_is_left_outside_the_catalogue(path: Path):
    text = path.read_text()
    left = []
    for match in SHOWN.finditer(text):
        value = literal(match.group(1))
        if PROSE.search(value):
            line = text.count("\n", 0, match.start()) + 1
            left.append(f"{path.relative_to(SRC)}:{line}: {value!r}")
    assert left == [], "texts shown to people without t():\n" + "\n".join(left)
