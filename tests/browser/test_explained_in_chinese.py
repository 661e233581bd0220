"""An error's explanation, why a function compiled again and what a timing measured, in the page's
language, in Chromium: the run's events carry the English and the templates it was made from, and
a Chinese page fills the templates' Chinese (a full-width parenthesis with its line, column and the
half-width one Python needs; a tracer used as a bool; a new shape; a %timeit that timed only the
dispatch), while an English page shows the English as sent."""

from __future__ import annotations


import pytest
from playwright.sync_api import Page, expect

from .playground import SCREENS, playground_in, run_code

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

# A new shape each time round a loop, and a %timeit of a call that is not waited for.
RECOMPILED_AND_TIMED = """\
import jax
import jax.numpy as jnp

double = jax.jit(lambda x: x * 2)
for n in range(1, 4):
    double(jnp.ones(n))
%timeit -n 3 -r 2 double(jnp.ones(3))
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


def test_why_it_compiled_again_and_what_a_timing_measured_in_chinese(browser, live_stack):
    with playground_in(browser, live_stack, height=800, locale="zh-CN") as page:
        assert run_code(page, RECOMPILED_AND_TIMED) == "succeeded"
        page.locator("#tab-compiled").click()
        reason = page.locator("#panel-compiled .row-reason").first
        expect(reason).to_have_text("参数 x 的形状变了：f32[1] → f32[2]")
        chip = page.locator("#panel-compiled .chip-warn").first
        assert chip.get_attribute("title").startswith("<lambda> 再次编译（第 2 次编译），原因：参数 x 的形状变了")
        expect(page.locator("#panel-compiled .row-warning").first).to_contain_text(
            "已经在第 6 行的循环里编译了 3 次")
        expect(page.locator("#panel-compiled .row-warning").first).to_contain_text("少数几种固定形状")
        page.screenshot(path=str(SCREENS / "zh-compiled-again.png"))

        page.locator("#tab-timing").click()
        note = page.locator("#panel-timing .measure-note").first
        expect(note).to_contain_text("double(jnp.ones(3)) 返回的 JAX 数组没有等它算完")
        expect(note).to_contain_text("改为计时 double(jnp.ones(3)).block_until_ready()，")
        expect(note.locator("code")).to_have_text(["double(jnp.ones(3))", "double(jnp.ones(3)).block_until_ready()"])
        expect(note).not_to_contain_text("Note:")
        page.screenshot(path=str(SCREENS / "zh-timing-notes.png"))
        # What %timeit printed is the snippet's output, as printed.
        expect(page.locator("#output")).to_contain_text("Note: `double(jnp.ones(3))` returns a JAX array")


def test_an_english_page_says_why_in_english(browser, live_stack):
    with playground_in(browser, live_stack, height=800, locale="en-US") as page:
        assert run_code(page, RECOMPILED_AND_TIMED) == "succeeded"
        page.locator("#tab-compiled").click()
        expect(page.locator("#panel-compiled .row-reason").first).to_have_text(
            "Argument x has a new shape: f32[1] → f32[2]")
        expect(page.locator("#panel-compiled .row-warning").first).to_contain_text(
            "has been compiled 3 times by line 6, in a loop")
        page.locator("#tab-timing").click()
        expect(page.locator("#panel-timing .measure-note").first).to_contain_text(
            "Note: double(jnp.ones(3)) returns a JAX array without waiting for it")


# More Python calls than a trace keeps of them (executor/runner/profile.py MAX_PYTHON_EVENTS).
MANY_CALLS = """\
def g(i):
    return i

for i in range(60_000):
    g(i)
"""


def test_what_a_profile_cut_is_said_in_chinese(browser, live_stack):
    with playground_in(browser, live_stack, height=800, locale="zh-CN") as page:
        page.locator("#profile-toggle").click()
        assert run_code(page, MANY_CALLS) == "succeeded"
        page.locator("#tab-timeline").click()
        notice = page.locator("#panel-timeline .tl-notice").first
        expect(notice).to_contain_text("Python 泳道共有")
        expect(notice).to_contain_text("只保留了最长的 50,000 次")
        expect(notice).not_to_contain_text("calls")
