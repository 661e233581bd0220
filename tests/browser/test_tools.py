"""The tools people reach for: the shortcuts panel (F1), Vim and Emacs key bindings (monaco-vim,
monaco-emacs) remembered across reloads, and the formatter (ruff, Shift+Alt+F)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .playground import assert_accessible, get_code, open_playground, set_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def click_editor_end(page: Page) -> None:
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")


def test_f1_opens_the_shortcuts_panel_from_the_editor_and_from_the_page(page: Page):
    dialog = page.locator("#shortcuts-dialog")
    page.locator("#editor .view-lines").click()
    page.keyboard.press("F1")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Keyboard shortcuts")).to_be_visible()
    expect(dialog).to_contain_text("Format the code (ruff)")
    expect(dialog.locator("kbd", has_text="Shift+Alt+F")).to_have_count(1)
    assert_accessible(page, "the shortcuts panel")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # The focus went back where it was.
    assert page.evaluate("document.activeElement.closest('#editor') !== null")

    page.locator("#run-button").focus()
    page.keyboard.press("F1")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    page.locator("#shortcuts-button").click()
    expect(dialog).to_be_visible()


def test_vim_keys_are_chosen_in_the_panel_work_and_are_remembered(page: Page):
    set_code(page, "x = 1\n")
    page.locator("#shortcuts-button").click()
    page.locator("#keymap-select").select_option("vim")
    page.keyboard.press("Escape")
    status = page.locator("#keymap-status")
    expect(status).to_be_visible()

    page.locator("#editor .view-lines").click()
    page.keyboard.press("Escape")  # Vim's normal mode, not "leave the editor"
    assert page.evaluate("document.activeElement.closest('#editor') !== null")
    page.keyboard.type("ggOimport jax")
    page.keyboard.press("Escape")
    assert get_code(page) == "import jax\nx = 1\n"
    page.keyboard.type("dd")
    assert get_code(page) == "x = 1\n"
    expect(status).to_contain_text("NORMAL")

    open_playground(page, reload=True)
    expect(page.locator("body")).to_have_attribute("data-keymap", "vim")
    expect(page.locator("#keymap-status")).to_be_visible()
    page.locator("#shortcuts-button").click()
    expect(page.locator("#keymap-select")).to_have_value("vim")
    page.locator("#keymap-select").select_option("standard")
    page.keyboard.press("Escape")
    expect(page.locator("#keymap-status")).to_be_hidden()
    open_playground(page, reload=True)
    expect(page.locator("body")).not_to_have_attribute("data-keymap", "vim")


def test_emacs_keys_move_as_in_emacs(page: Page):
    set_code(page, "abc\n")
    page.locator("#shortcuts-button").click()
    page.locator("#keymap-select").select_option("emacs")
    page.keyboard.press("Escape")
    expect(page.locator("#keymap-status")).to_contain_text("Emacs")
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+Home")
    page.keyboard.press("Control+e")  # end of line
    page.keyboard.type("X")
    page.keyboard.press("Control+a")  # start of line
    page.keyboard.type("Y")
    assert get_code(page) == "YabcX\n"


def test_the_formatter_formats_with_ruff_keeps_magics_and_says_why_it_cannot(page: Page):
    messy = "import jax\nx=[1,2,\n   3]\n%timeit sum( x )\ndef f(a): return a*2\n"
    set_code(page, messy)
    click_editor_end(page)
    page.keyboard.press("Shift+Alt+F")
    page.wait_for_function("() => window.playground.getCode().includes('x = [1, 2, 3]')")
    assert get_code(page) == "import jax\n\nx = [1, 2, 3]\n%timeit sum( x )\n\n\ndef f(a):\n    return a * 2\n"
    page.keyboard.press("Control+z")
    assert get_code(page) == messy

    set_code(page, "def f(:\n    pass\n")
    page.locator("#format-code").click()
    expect(page.locator("#run-message")).to_contain_text("Not formatted: the code is not valid Python at line 1")
    assert get_code(page) == "def f(:\n    pass\n"
