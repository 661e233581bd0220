"""The instructors' guide to hidden checks in Chinese (docs/CHECKS.zh-CN.md) is the English one
(docs/CHECKS.md) said again, not a second guide that drifts from it: the same headings in the same
order, every code block byte for byte, the same tables and links. A zh-CN browser is served it at
/courses/checks; everyone else the English."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = ROOT / "docs" / "CHECKS.md"
CHINESE = ROOT / "docs" / "CHECKS.zh-CN.md"
FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)


def without_code(text: str) -> str:
    return FENCE.sub("", text)


def headings(text: str) -> list[int]:
    return [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) \S", without_code(text), re.M)]


def tables(text: str) -> list[tuple[int, int]]:
    """(rows, columns) of each table, in order."""
    found, rows = [], []
    for line in without_code(text).splitlines() + [""]:
        if line.lstrip().startswith("|"):
            rows.append(line)
        elif rows:
            found.append((len(rows), rows[0].strip().strip("|").count("|") + 1))
            rows = []
    return found


def links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", without_code(text))


def inline_code(text: str) -> list[str]:
    """The code spans, each as one line (a span may wrap in the Markdown)."""
    return sorted({" ".join(code.split()) for code in re.findall(r"`([^`]+)`", without_code(text))})


@pytest.fixture(scope="module")
def texts() -> tuple[str, str]:
    return ENGLISH.read_text(encoding="utf-8"), CHINESE.read_text(encoding="utf-8")


def test_the_twin_has_the_same_headings_code_tables_and_links(texts):
    english, chinese = texts
    assert headings(chinese) == headings(english)
    assert FENCE.findall(english) and [m.group(0) for m in FENCE.finditer(chinese)] == \
        [m.group(0) for m in FENCE.finditer(english)]
    assert tables(chinese) == tables(english)
    assert links(chinese) == links(english)
    missing = [code for code in inline_code(english) if code not in inline_code(chinese)]
    assert missing == [], f"code in the English that the Chinese does not name: {missing}"


def test_the_twin_is_chinese_prose(texts):
    _, chinese = texts
    prose = re.sub(r"`[^`]+`", "", without_code(chinese))
    han = len(re.findall(r"[\u4e00-\u9fff]", prose))
    latin = len(re.findall(r"[A-Za-z]{3,}", prose))
    assert han > 2000 and latin < han / 10, (han, latin)


@pytest.mark.django_db
def test_a_chinese_reader_is_served_the_twin_and_an_english_one_the_guide(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("wang"))
    first_heading = re.search(r"^# (.+)$", CHINESE.read_text(encoding="utf-8"), re.M).group(1)
    page = client.get("/courses/checks", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert f"<h1>{first_heading}</h1>" in page
    assert '<article class="sheet markdown checks-guide">' in page and "本指南目前只有英文版" not in page
    page = client.get("/courses/checks", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<h1>Writing an assignment's hidden checks</h1>" in page and first_heading not in page


@pytest.mark.django_db
def test_without_a_twin_the_english_is_served_and_says_so(django_user_model, monkeypatch):
    from courses import views

    monkeypatch.setitem(views.CHECKS_GUIDES, "zh-hans", "CHECKS.no-such-language.md")
    client = Client()
    client.force_login(django_user_model.objects.create_user("wang"))
    page = client.get("/courses/checks", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "本指南目前只有英文版。" in page and '<article class="sheet markdown checks-guide" lang="en">' in page
    assert "<h1>Writing an assignment's hidden checks</h1>" in page
