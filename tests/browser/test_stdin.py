"""The run's Input in a real Chromium against the whole stack: opened under the editor, typed in,
sent with Run (the code reads it), kept across a reload, shared with the link, shown filled on the
snippet's page, whose Run reads it again; input() past its end explained, in Chinese on a Chinese
page.

Screenshots of the playground with its Input open, light and dark, at a desktop's and a phone's
width, and of a Chinese page, go to /tmp/screens for a person to look at.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import (SCREENS, assert_accessible, open_playground, output, playground_in, set_code,
                         wait_until_finished)
from .test_sharing import fresh_page, path_of, runs_started, share

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = """\
n = int(input())
for i in range(n):
    print(f"line {i + 1}:", input())
"""
TYPED = "2\nfirst\n第二行"
PRINTED = "line 1: first\nline 2: 第二行\n"


def input_box(page: Page):
    """The Input's disclosure button and its text box."""
    return page.locator(".run-input .input-toggle"), page.locator(".run-input textarea")


def screenshot(page: Page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"stdin-{name}.png"))


def test_the_input_is_read_by_the_run_kept_and_shared_with_the_link(page: Page, browser: Browser, live_stack):
    toggle, text = input_box(page)
    # Closed at first, and empty: nothing is sent.
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(text).to_be_hidden()
    expect(page.locator(".input-count")).to_have_text("empty")
    expect(page.get_by_role("button", name="Input stdin")).to_be_visible()

    set_code(page, CODE)
    screenshot(page, "closed-light")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(text).to_be_focused()
    page.keyboard.type(TYPED)
    expect(page.locator(".input-count")).to_have_text(f"3 lines · {len(TYPED.encode())} B")
    assert page.evaluate("getComputedStyle(document.querySelector('.run-input textarea')).fontFamily").startswith(
        "ui-monospace")

    # Ctrl+Enter in the Input runs, as in the editor.
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == PRINTED
    run_id = page.evaluate("window.playground.runId()")
    assert live_stack.wait_finished(run_id)["stdin"] == TYPED
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        screenshot(page, f"playground-{scheme}")
    page.emulate_media(color_scheme="light")
    assert_accessible(page, "the Input open")

    # A reload keeps it with the code, open.
    open_playground(page, reload=True)
    toggle, text = input_box(page)
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(text).to_have_value(TYPED)

    # Share says the link keeps the input, and keeps it; the run's output too.
    page.evaluate("window.playground.run()")
    assert wait_until_finished(page) == "succeeded"
    page.click("#share-button")
    expect(page.locator("#share-run-note")).to_have_text(
        "The link keeps this code with its input (3 lines). The link keeps the output of your last run of this code.")
    screenshot(page, "share-light")
    page.keyboard.press("Escape")
    url, posted, _ = share(page, title="Lines from the input")
    assert posted["stdin"] == TYPED and posted["code"] == CODE and posted["run"] is not None
    page.keyboard.press("Escape")

    # The link's page shows the Input filled, and the saved output; its Run reads the same input.
    with fresh_page(browser, live_stack) as (other, requests):
        open_playground(other, path=path_of(url))
        toggle, text = input_box(other)
        expect(toggle).to_have_attribute("aria-expanded", "true")
        expect(text).to_have_value(TYPED)
        expect(other.locator("#output")).to_have_text(PRINTED)
        other.click("#run-button")
        assert wait_until_finished(other) == "succeeded"
        expect(other.locator("#output")).to_have_text(PRINTED)
        slug = path_of(url).rsplit("/", 1)[1]
        assert runs_started(requests) == [{"code": CODE, "device": "cpu", "stdin": TYPED, "snippet": slug,
                                           "runtime": "jax-0.12.0.1"}]
        screenshot(other, "snippet-light")

        # Another input is another link: a fork, whose dialog says its last run read another one.
        text.fill("1\nonly\n")
        other.click("#share-button")
        expect(other.locator("#share-run-note")).to_contain_text("read another input")
        expect(other.locator("#share-title-input")).to_have_value("Lines from the input (fork)")


def test_a_phone_shows_the_input_under_the_editor(browser: Browser, live_stack):
    context = browser.new_context(base_url=live_stack.url, viewport={"width": 390, "height": 844},
                                  color_scheme="dark", is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        open_playground(page)
        set_code(page, CODE)
        toggle, text = input_box(page)
        toggle.click()
        text.fill("1\nhello\n")
        page.click("#run-button")
        assert wait_until_finished(page) == "succeeded"
        assert output(page) == "line 1: hello\n"
        box, editor = page.locator(".run-input").bounding_box(), page.locator("#editor").bounding_box()
        assert box["y"] >= editor["y"] + editor["height"] - 1, "under the editor"
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, "within the screen"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.locator(".run-input").scroll_into_view_if_needed()
        screenshot(page, "phone-dark")
        assert_accessible(page, "the Input open on a phone, dark")
    finally:
        context.close()


def test_input_past_its_end_is_explained_in_chinese_on_a_chinese_page(browser: Browser, live_stack):
    with playground_in(browser, live_stack, locale="zh-CN") as page:
        toggle, text = input_box(page)
        expect(toggle).to_have_text(re.compile(r"输入\s*stdin"))
        expect(page.locator(".input-count")).to_have_text("空")
        toggle.click()
        text.fill("3\n4\n")
        expect(page.locator(".input-count")).to_have_text("2 行 · 4 B")
        set_code(page, "a = int(input())\nb = int(input())\nprint(a + b)\nprint(input())\n")
        page.click("#run-button")
        assert wait_until_finished(page) == "failed"
        expect(page.locator("#output")).to_have_text("7\n")
        expect(page.locator("#error-box")).to_contain_text("EOFError")
        explanation = page.locator("#error-box .error-explanation")
        expect(explanation).to_contain_text("input() 读不到更多输入了：这次运行的输入共有 2 行，已经全部读完。")
        expect(explanation.locator("code", has_text="for line in sys.stdin:")).to_be_visible()
        screenshot(page, "chinese-light")
        assert_accessible(page, "the Input open, in Chinese")


def test_each_document_keeps_its_own_input(page: Page):
    """The Input goes with the document open, as its draft does: an example opened has its own
    (none), and the person's own code brings theirs back."""
    toggle, text = input_box(page)
    set_code(page, CODE)
    toggle.click()
    text.fill("1\nmine\n")
    slug = page.evaluate("JSON.parse(document.getElementById('examples-data').textContent)[0].slug")
    assert page.evaluate("slug => window.playground.openExample(slug)", slug)
    expect(text).to_have_value("")
    page.click("#restore-code")
    expect(text).to_have_value("1\nmine\n")
    open_playground(page, reload=True)
    expect(input_box(page)[1]).to_have_value("1\nmine\n")


def test_an_embed_runs_with_its_snippets_input(browser: Browser, live_stack):
    with playground_in(browser, live_stack, locale="en-US") as page:
        created = page.request.post("/api/snippets", data={"code": CODE, "stdin": TYPED})
        assert created.status == 201, created.text()
        page.goto(f"/embed/{created.json()['slug']}")
        page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        expect(page.locator("#run-button")).to_be_enabled()
        page.locator("#run-button").click()
        assert wait_until_finished(page) == "succeeded"
        expect(page.locator("#output")).to_have_text(PRINTED)


def test_compare_sends_the_input_to_both_sides(page: Page):
    toggle, text = input_box(page)
    toggle.click()
    text.fill(TYPED)
    set_code(page, CODE)
    page.locator("#compare-button").click()
    expect(page.locator("#compare-dialog")).to_be_visible()
    runtimes = page.locator("#compare-b-runtime option").evaluate_all("options => options.map(o => o.value)")
    page.locator("#compare-b-runtime").select_option(next(r for r in runtimes if r != runtimes[0]))
    with page.expect_request(lambda r: r.url.endswith("/api/comparisons") and r.method == "POST") as posted:
        page.locator("#compare-submit").click()
    assert posted.value.post_data_json["stdin"] == TYPED
