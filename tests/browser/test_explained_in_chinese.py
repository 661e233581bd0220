"""An error's explanation in the page's language, in Chromium: the run's event carries the English
and the template it was made from, and a Chinese page fills the template's Chinese (a full-width
parenthesis with its line, column and the half-width one Python needs; a tracer used as a bool),
while an English page shows the English as sent."""

from __future__ import annotations


import pytest
from playwright.sync_api import Page, expect

from .playground import playground_in, run_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACER_BOOL = """\
import jax

@jax.jit
def f(x):
    if x > 0:
        return x
    return -x

f(1.0)
"""




def explanation(page: Page):
    return page.locator("#error-box .error-explanation")


def test_a_chinese_page_explains_in_chinese(browser, live_stack):
    with playground_in(browser, live_stack, height=800, locale="zh-CN") as page:
        assert page.evaluate("document.documentElement.lang").lower() == "zh-hans"

        assert run_code(page, "print（1）\n") == "failed"
        expect(explanation(page)).to_contain_text(
            "第 1 行第 6 列的 '（' (U+FF08) 是全角括号，Python 只认半角的 '('。")
        expect(explanation(page)).to_contain_text("快速修复")
        expect(explanation(page)).not_to_contain_text("full-width")

        assert run_code(page, TRACER_BOOL) == "failed"
        expect(explanation(page)).to_contain_text("需要一个具体的 True 或 False")
        expect(explanation(page)).to_contain_text("追踪值")
        # Code in the sentence is still code.
        expect(explanation(page).locator("code", has_text="bool()")).to_be_visible()
        expect(explanation(page)).not_to_contain_text("needs a concrete")


def test_an_english_page_shows_the_english_as_sent(browser, live_stack):
    with playground_in(browser, live_stack, height=800, locale="en-US") as page:
        assert page.evaluate("document.documentElement.lang").lower() == "en"
        assert run_code(page, "print（1）\n") == "failed"
        expect(explanation(page)).to_contain_text(
            "Line 1, column 6: '（' (U+FF08) is a full-width parenthesis; Python only reads the half-width '('.")
        assert run_code(page, TRACER_BOOL) == "failed"
        expect(explanation(page)).to_contain_text("needs a concrete True or False")
