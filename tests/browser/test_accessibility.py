"""WCAG 2.2 AA on every page and in every state a person reaches, checked by axe-core in
Chromium, light and dark, wide and narrow; and the main journeys done with the keyboard alone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import SCREENS, assert_accessible, open_playground, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# One run that fills every pane: output on both streams, two compilations, a timing, a figure,
# and an error at the end.
EVERY_PANE = """\
import sys
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

f = jax.jit(lambda x: jnp.sin(x) * 2)
g = jax.jit(lambda x: x @ x)
print("value:", f(jnp.arange(3.0)))
print(g(jnp.ones((3, 3))))
print("a note", file=sys.stderr)
print("\x1b[32mok\x1b[0m \x1b[33mwarn\x1b[0m \x1b[31merror\x1b[0m \x1b[36mcyan\x1b[0m")
%timeit -n 5 -r 3 f(jnp.arange(3.0)).block_until_ready()
plt.plot([1, 2, 3])
plt.show()
1 / 0
"""

SIZES = {"wide": (1440, 900), "laptop": (1024, 768), "phone": (390, 844)}


def resize(page: Page, size: str) -> None:
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_function(
        "() => document.querySelector('#editor .monaco-editor').offsetWidth"
        " === document.querySelector('#editor').offsetWidth"
    )


def new_page(browser: Browser, live_stack, theme: str, size: str = "wide", locale: str = "en-US") -> Page:
    width, height = SIZES[size]
    # Reduced motion: no colour is checked halfway through a transition. The browser's language
    # is the page's (Accept-Language).
    context = browser.new_context(base_url=live_stack.url, viewport={"width": width, "height": height},
                                  color_scheme=theme, reduced_motion="reduce", locale=locale)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    return page


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_playground_page_passes_axe_in_every_state(browser: Browser, live_stack, theme: str):
    page = new_page(browser, live_stack, theme)
    try:
        open_playground(page)
        assert_accessible(page, "the page as it opens")

        for menu in ("examples", "libraries"):
            page.locator(f"#{menu}-button").click()
            expect(page.locator(f"#{menu}-menu")).to_be_visible()
            assert_accessible(page, f"the {menu} menu open")
            page.keyboard.press("Escape")
            expect(page.locator(f"#{menu}-menu")).to_be_hidden()

        set_code(page, EVERY_PANE)
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "failed"
        for tab in ("output", "compiled", "timing", "figures"):
            page.locator(f"#tab-{tab}").click()
            assert_accessible(page, f"after a run, the {tab} tab")
        page.locator("#tab-compiled").click()
        page.locator(".compiled-toolbar button", has_text="Compare").click()
        expect(page.locator(".compiled-toolbar select").first).to_be_visible()
        assert_accessible(page, "two compilations compared")

        page.locator("#tab-output").click()
        page.locator("#share-button").click()
        expect(page.locator("#share-dialog")).to_be_visible()
        assert_accessible(page, "the share dialog")
        page.keyboard.press("Escape")

        for size in ("laptop", "phone"):
            resize(page, size)
            assert_accessible(page, f"after a run at {size} size")
            # Nothing is cut off sideways: the page, the editor's header and its buttons fit.
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
            assert page.evaluate("(() => { const h = document.querySelector('.panel-editor .panel-header');"
                                 " return h.scrollWidth <= h.clientWidth; })()")
            page.screenshot(path=SCREENS / f"a11y-run-{size}-{theme}.png")
        assert page.errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_snippet_page_and_its_embed_pass_axe(browser: Browser, live_stack, theme: str):
    page = new_page(browser, live_stack, theme)
    try:
        created = page.request.post("/api/snippets", data={
            "code": "print('shared')\n", "title": "A shared snippet",
            "description": "Some *Markdown* with a [link](https://example.org).",
        })
        slug = created.json()["slug"]
        open_playground(page, path=f"/s/{slug}")
        assert_accessible(page, "a snippet page")
        open_playground(page, path=f"/embed/{slug}")
        assert_accessible(page, "an embed")
        page.get_by_role("button", name="Run").click()
        assert wait_until_finished(page) == "succeeded"
        assert_accessible(page, "an embed after its run")
        assert page.errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_account_pages_pass_axe(browser: Browser, live_stack, theme: str):
    from django.contrib.auth import get_user_model
    from django.test import Client

    page = new_page(browser, live_stack, theme)
    try:
        for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password_reset/", "/no-such-page"):
            page.goto(path)
            assert_accessible(page, path)

        user = get_user_model().objects.create_user("ada", email="ada@example.org", password="analytical-engine-1843")
        client = Client()
        client.force_login(user)
        page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                                   "url": live_stack.url}])
        open_playground(page)
        set_code(page, "print('mine')\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"
        page.locator("#account-button").click()
        expect(page.locator("#account-menu")).to_be_visible()
        assert_accessible(page, "the account menu")
        page.request.post("/api/snippets", data={"code": "print('mine')\n", "title": "Mine"},
                          headers={"X-CSRFToken": next(c["value"] for c in page.context.cookies()
                                                       if c["name"] == "csrftoken")})
        for path in ("/accounts/", "/me/snippets/", "/me/runs/", "/accounts/password_change/"):
            page.goto(path)
            assert_accessible(page, path)
        assert page.errors == []
    finally:
        page.context.close()


def focused(page: Page) -> str:
    """The focused element, as ``tag#id.class`` (enough to tell controls apart)."""
    return page.evaluate(
        "() => { const e = document.activeElement;"
        " return e ? `${e.tagName.toLowerCase()}#${e.id}.${[...e.classList].join('.')}` : ''; }"
    )


def has_focus_ring(page: Page) -> bool:
    """The focused control draws an outline or a ring (box-shadow) that it does not draw
    unfocused."""
    return page.evaluate(
        """() => {
            const style = getComputedStyle(document.activeElement);
            const outline = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
            return outline || style.boxShadow.includes("0px 0px 0px");
        }"""
    )


def tab_to(page: Page, selector: str, backwards: bool = False, limit: int = 40) -> None:
    """Press Tab (or Shift+Tab) until ``selector`` has the focus, as a person would."""
    seen = []
    for _ in range(limit):
        if page.evaluate("s => document.activeElement?.matches(s) ?? false", selector):
            assert has_focus_ring(page), f"{selector} has the focus but shows no focus ring"
            return
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        seen.append(focused(page))
    raise AssertionError(f"Tab never reached {selector}; it went through {seen}")


# The diff's two pickers, by their accessible names in each language.
SIDES = {"en-US": ("Left side", "Right side"), "zh-CN": ("左侧", "右侧")}


@pytest.mark.parametrize("locale", SIDES)
def test_a_keyboard_alone_opens_an_example_runs_it_switches_tabs_compares_and_cancels(browser: Browser, live_stack,
                                                                                       locale: str):
    left, right = SIDES[locale]
    page = new_page(browser, live_stack, "light", locale=locale)
    try:
        open_playground(page)
        page.locator("body").focus()

        # Open the fourth example from the menu: Tab to the button, Enter, the arrows, Enter.
        tab_to(page, "#examples-button")
        expect(page.locator("#examples-button")).to_have_attribute("aria-expanded", "false")
        page.keyboard.press("Enter")
        expect(page.locator("#examples-menu")).to_be_visible()
        expect(page.locator("#examples-button")).to_have_attribute("aria-expanded", "true")
        # The focus moves into the menu, on its first example.
        expect(page.locator("#examples-menu .example-item").first).to_be_focused()
        for _ in range(3):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        expect(page.locator("#examples-menu")).to_be_hidden()
        assert page.evaluate("location.hash") == "#example=grad"

        # The editor has the focus; Ctrl+Enter runs.
        assert "native-edit-context" in focused(page) or "inputarea" in focused(page)
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"

        # Escape leaves the editor; Tab reaches the result tabs; the arrows switch them.
        page.keyboard.press("Escape")
        tab_to(page, "#tab-output")
        page.keyboard.press("ArrowRight")
        expect(page.locator("#tab-compiled")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#panel-compiled")).to_be_visible()
        page.keyboard.press("End")
        expect(page.locator("#tab-figures")).to_have_attribute("aria-selected", "true")
        page.keyboard.press("Home")
        expect(page.locator("#tab-output")).to_have_attribute("aria-selected", "true")
        page.keyboard.press("ArrowLeft")
        expect(page.locator("#tab-figures")).to_have_attribute("aria-selected", "true")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        expect(page.locator("#tab-compiled")).to_have_attribute("aria-selected", "true")

        # Compare: Tab into the pane, to the button, Enter; a diff with its two pickers.
        tab_to(page, "#panel-compiled .compare-button")
        page.keyboard.press("Enter")
        expect(page.locator(f"#panel-compiled select[aria-label='{left}']")).to_be_visible()
        expect(page.locator("#panel-compiled .monaco-diff-editor")).to_be_visible()
        tab_to(page, f"#panel-compiled select[aria-label='{right}']")
        page.keyboard.press("Escape")

        # A run that would go on for long: started from the keyboard, cancelled from it.
        tab_to(page, "#run-button", backwards=True)
        page.evaluate("code => window.playground.setCode(code)", "import time\nwhile True:\n    time.sleep(0.1)\n")
        page.keyboard.press("Enter")
        expect(page.locator("#cancel-button")).to_be_visible()
        page.wait_for_function("() => document.querySelector('#run-status').dataset.status === 'running'",
                               timeout=60_000)
        tab_to(page, "#cancel-button")
        page.keyboard.press("Enter")
        assert wait_until_finished(page) == "cancelled"
        assert page.errors == []
    finally:
        page.context.close()
