"""Code typed with a Chinese input method, in Chromium: full-width punctuation in code (not in a
string or a comment) is marked as it is typed, in the page's language, and one quick fix makes it
ASCII in one undoable edit; a composition in progress is left alone (no completion, no request to
the analyser or the linter, no marker changes) and the editor's help comes back once it is
committed; Monaco's own widgets (find, the context menu) speak the page's language."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from .playground import playground_in, SCREENS, get_code, set_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HELP = ("/api/analyse", "/api/lint")




def markers(page: Page, owner: str) -> list[dict]:
    return page.evaluate("owner => window.playground.markers(owner)", owner)


def wait_for_markers(page: Page, owner: str, where: list[tuple[int, int]]) -> list[dict]:
    """The owner's markers, once they are at ``where`` (line, column), in order."""
    page.wait_for_function("""([owner, where]) => JSON.stringify(window.playground.markers(owner)
        .map((m) => [m.line, m.column])) === JSON.stringify(where)""", arg=[owner, where], timeout=10_000)
    return markers(page, owner)


def put_cursor(page: Page, line: int, column: int) -> None:
    page.evaluate("""([line, column]) => {
        const editor = window.playground.editor;
        editor.focus();
        editor.setPosition({lineNumber: line, column});
    }""", [line, column])


def test_full_width_punctuation_in_code_is_marked_in_chinese_and_fixed_in_one_undoable_edit(browser, live_stack):
    with playground_in(browser, live_stack, "zh-CN") as page:
        assert page.evaluate("document.documentElement.lang").lower() == "zh-hans"
        set_code(page, "")
        page.locator("#editor .view-lines").click()
        page.keyboard.type("print（1）", delay=30)
        found = wait_for_markers(page, "fullwidth", [(1, 6), (1, 8)])
        assert [m["severity"] for m in found] == ["Error", "Error"]
        assert found[0]["message"] == "全角字符 '（' (U+FF08)，应为半角 '('"
        assert found[1]["message"] == "全角字符 '）' (U+FF09)，应为半角 ')'"
        # ruff's "unexpected token" for the same characters is left to these markers.
        page.wait_for_function("() => window.playground.markers('problems').length === 0")

        # Chinese in a string or a comment is the person's text: never marked.
        set_code(page, 's = "你好，世界"\n# 注释：说明\nt = “引号”  # 说明：完\n')
        wait_for_markers(page, "fullwidth", [(3, 5), (3, 8)])
        set_code(page, 's = "你好，世界"\n# 注释：说明\n')
        wait_for_markers(page, "fullwidth", [])
        time.sleep(1)
        assert markers(page, "fullwidth") == []

        before = 'x = f（1，2）\ns = "（）"\n'
        set_code(page, before)
        wait_for_markers(page, "fullwidth", [(1, 6), (1, 8), (1, 10)])
        # The marker's hover names the character, and offers Monaco's quick fix, in Chinese.
        x, y = page.evaluate("""() => {
            const editor = window.playground.editor;
            const at = editor.getScrolledVisiblePosition({lineNumber: 1, column: 6});
            const box = editor.getDomNode().getBoundingClientRect();
            return [box.left + at.left + 4, box.top + at.top + at.height / 2];
        }""")
        page.mouse.move(x - 8, y)
        page.mouse.move(x, y, steps=4)
        hover = page.locator(".monaco-hover:not(.hidden)").filter(has_text="U+FF08")
        expect(hover).to_contain_text("全角字符 '（' (U+FF08)，应为半角 '('", timeout=10_000)
        expect(hover).to_contain_text("快速修复")
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "zh-fullwidth-hover.png"))
        page.mouse.move(1, 1)

        put_cursor(page, 1, 6)
        page.keyboard.press("Control+.")
        fix_all = page.locator(".action-widget").get_by_text("将全角标点替换为半角")
        expect(fix_all).to_be_visible(timeout=10_000)
        expect(page.locator(".action-widget").get_by_text("将 '（' 替换为 '('")).to_be_visible()
        page.screenshot(path=str(SCREENS / "zh-fullwidth-quick-fix.png"))
        fix_all.click()
        page.wait_for_function("() => !window.playground.getCode().includes('（1')")
        assert get_code(page) == 'x = f(1,2)\ns = "（）"\n'
        wait_for_markers(page, "fullwidth", [])

        # One edit: one undo brings all of it back.
        page.evaluate("() => window.playground.editor.focus()")
        page.keyboard.press("Control+Z")
        assert get_code(page) == before
        wait_for_markers(page, "fullwidth", [(1, 6), (1, 8), (1, 10)])

        # The one character's own fix.
        put_cursor(page, 1, 9)
        page.keyboard.press("Control+.")
        one = page.locator(".action-widget").get_by_text("将 '，' 替换为 ','")
        expect(one).to_be_visible(timeout=10_000)
        one.click()
        page.wait_for_function("() => window.playground.getCode().startsWith('x = f（1,2）')")


def test_the_english_page_says_it_in_english(browser, live_stack):
    with playground_in(browser, live_stack, "en-US") as page:
        set_code(page, "print（1）\n")
        found = wait_for_markers(page, "fullwidth", [(1, 6), (1, 8)])
        assert found[0]["message"] == "Full-width '（' (U+FF08): Python needs '('"
        put_cursor(page, 1, 6)
        page.keyboard.press("Control+.")
        expect(page.locator(".action-widget").get_by_text("Replace full-width punctuation with half-width")
               ).to_be_visible(timeout=10_000)
        expect(page.locator(".action-widget").get_by_text("Replace '（' with '('")).to_be_visible()


def test_a_composition_is_left_alone_until_it_is_committed(browser, live_stack):
    with playground_in(browser, live_stack, "zh-CN") as page:
        sent: list[str] = []
        page.on("request", lambda request: sent.append(request.url) if any(p in request.url for p in HELP) else None)
        set_code(page, "x = 1\nprint(x)\n")
        # The check of that code has been made: what follows starts from quiet.
        page.wait_for_function("() => window.playground.markers('problems').length === 0")
        time.sleep(1.5)
        put_cursor(page, 2, 7)
        shown = markers(page, "problems") + markers(page, "fullwidth")
        sent.clear()

        cdp = page.context.new_cdp_session(page)
        for typed in ("n", "ni", "nih", "niha", "nihao"):
            cdp.send("Input.imeSetComposition", {"text": typed, "selectionStart": len(typed),
                                                 "selectionEnd": len(typed)})
            time.sleep(0.3)
        assert get_code(page) == "x = 1\nprint(nihaox)\n", "the composition is in the editor"
        # Longer than the pause after which problems are checked, and than a completion's wait.
        time.sleep(1.5)
        expect(page.locator(".suggest-widget.visible")).to_have_count(0)
        assert sent == [], f"asked the server during a composition: {sent}"
        assert markers(page, "problems") + markers(page, "fullwidth") == shown
        page.screenshot(path=str(SCREENS / "zh-composing.png"))

        cdp.send("Input.insertText", {"text": "你好"})
        assert get_code(page) == "x = 1\nprint(你好x)\n"
        # The help is back: the code is checked (an undefined name now) and completion asked.
        found = wait_for_markers(page, "problems", [(2, 7)])
        assert "你好x" in found[0]["message"]
        time.sleep(1)
        assert sum("/api/lint" in url for url in sent) == 1, f"checked once after the composition: {sent}"


@pytest.mark.parametrize(("locale", "find", "copy"), [("zh-CN", "查找", "复制"), ("en-US", "Find", "Copy")])
def test_monacos_own_widgets_speak_the_pages_language(browser, live_stack, locale, find, copy):
    with playground_in(browser, live_stack, locale) as page:
        set_code(page, "x = 1\n")
        page.locator("#editor .view-lines").click()
        page.keyboard.press("Control+F")
        widget = page.locator(".find-widget.visible")
        expect(widget).to_be_visible()
        expect(widget.locator("textarea").first).to_have_attribute("placeholder", find)
        page.screenshot(path=str(SCREENS / f"find-widget-{locale}.png"))
        page.keyboard.press("Escape")
        page.locator("#editor .view-lines").click(button="right")
        menu = page.locator(".monaco-menu .action-label").filter(has_text=copy)
        expect(menu.first).to_be_visible()
        page.screenshot(path=str(SCREENS / f"context-menu-{locale}.png"))
        page.keyboard.press("Escape")
