"""Every Chinese catalogue of the server (each app's ``locale/zh_Hans/LC_MESSAGES/django.po``, the
project package's ``web/locale`` too, whoever wrote it) is whole: each entry translated, none left
fuzzy, and each translation fills the same placeholders as its English, so that no page shows an
English text or a ``%(name)s`` unfilled, and no ``%`` formatting fails for want of an argument."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {".venv", "var", "node_modules", "frontend", "staticfiles", ".git"}
# Python's named placeholders (%(name)s, %(count)d) and str.format's ({name}).
PLACEHOLDER = re.compile(r"%\(\w+\)[sdif]|\{\w+\}")


def catalogues() -> list[Path]:
    found = []
    for path in ROOT.glob("**/locale/zh_Hans/LC_MESSAGES/django.po"):
        if not SKIPPED.intersection(path.relative_to(ROOT).parts):
            found.append(path)
    return sorted(found)


def _unquote(text: str) -> str:
    body = text.strip()[1:-1]
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def entries(path: Path) -> list[dict]:
    """The catalogue's entries: {"flags", "msgctxt"?, "msgid", "msgid_plural"?, "msgstr" or
    "msgstr[n]", "line"}, the header included (its msgid is empty). Obsolete entries (#~) are
    left out, as gettext leaves them."""
    found, entry, field = [], None, None

    def close():
        if entry is not None and "msgid" in entry:
            found.append(entry)

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#~"):
            continue
        if stripped.startswith("#"):
            if entry is not None and any(key.startswith("msgstr") for key in entry):
                close()
                entry = None
            entry = entry or {"flags": set(), "line": number}
            if stripped.startswith("#,"):
                entry["flags"].update(flag.strip() for flag in stripped[2:].split(","))
            continue
        keyword = re.match(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(\".*\")$", stripped)
        if keyword:
            name = keyword.group(1)
            if name in ("msgctxt", "msgid") and entry is not None and any(key.startswith("msgstr") for key in entry):
                close()
                entry = None
            entry = entry or {"flags": set(), "line": number}
            field = name
            entry[field] = _unquote(keyword.group(2))
        elif stripped.startswith('"') and entry is not None and field is not None:
            entry[field] += _unquote(stripped)
        else:
            raise AssertionError(f"{path}:{number}: a line that is not .po: {line!r}")
    close()
    return found


def translations(entry: dict) -> list[str]:
    return [value for key, value in sorted(entry.items()) if key.startswith("msgstr")]


def where(path: Path, entry: dict) -> str:
    return f"{path.relative_to(ROOT)}:{entry['line']}: {entry['msgid'][:80]!r}"


CATALOGUES = catalogues()


def test_the_apps_catalogues_are_found():
    names = {path.relative_to(ROOT).parts[0] for path in CATALOGUES}
    assert {"playground", "snippets", "notebooks", "web"} <= names, names


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT).parts[0]))
def test_every_entry_is_translated_with_the_same_placeholders(path):
    problems = []
    body = [entry for entry in entries(path) if entry["msgid"]]
    assert body, f"{path.relative_to(ROOT)} has no entries"
    for entry in body:
        if "fuzzy" in entry["flags"]:
            problems.append(f"{where(path, entry)} is fuzzy")
        texts = translations(entry)
        if not texts or not all(text.strip() for text in texts):
            problems.append(f"{where(path, entry)} is not translated")
            continue
        english = set(PLACEHOLDER.findall(entry["msgid"]))
        plural = set(PLACEHOLDER.findall(entry.get("msgid_plural", entry["msgid"])))
        for text in texts:
            chinese = set(PLACEHOLDER.findall(text))
            # A plural's Chinese form is the plural's: it has the English plural's placeholders.
            if chinese not in (english, plural):
                problems.append(f"{where(path, entry)}: placeholders {sorted(chinese)} where the English has "
                                f"{sorted(english | plural)}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT).parts[0]))
def test_the_header_says_the_language_and_is_not_fuzzy(path):
    header = next((entry for entry in entries(path) if not entry["msgid"]), None)
    assert header is not None, f"{path.relative_to(ROOT)} has no header"
    assert "fuzzy" not in header["flags"], f"{path.relative_to(ROOT)}: the header is fuzzy"
    assert "charset=UTF-8" in header.get("msgstr", ""), path
