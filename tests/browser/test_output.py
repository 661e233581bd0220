"""The Output tab behaves like a terminal: ANSI colours and styles rendered (by ansi_up), other
escape sequences dropped instead of shown as boxes, huge outputs drawn a window at a time, and a
figure that links back to the line that made it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .playground import output, run_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_ansi_colours_and_styles_render_and_other_sequences_vanish(page: Page):
    code = (
        "print('\\x1b[31mred\\x1b[0m plain \\x1b[1;32mbold green\\x1b[0m')\n"
        "print('\\x1b[38;5;208morange\\x1b[39m \\x1b[4munderlined\\x1b[24m')\n"
        "print('up\\x1b[A\\r\\x1b[2Kgone\\x1b[Kend')\n"
        "import sys; print('\\x1b[33mwarning\\x1b[0m', file=sys.stderr)\n"
    )
    assert run_code(page, code) == "succeeded"
    assert output(page) == "red plain bold green\norange underlined\ngoneend\nwarning\n"
    red = page.locator("#output .ansi-red-fg")
    expect(red).to_have_text("red")
    plain_colour = page.evaluate("getComputedStyle(document.querySelector('#output .stdout')).color")
    assert red.evaluate("e => getComputedStyle(e).color") != plain_colour
    green = page.locator("#output .ansi-green-fg")
    expect(green).to_have_text("bold green")
    assert int(green.evaluate("e => getComputedStyle(e).fontWeight")) >= 600
    # 256 colours come as an inline colour; underline as a style.
    orange = page.locator("#output span[style*='color']", has_text="orange")
    expect(orange).to_have_count(1)
    underlined = page.locator("#output span", has_text="underlined").last
    assert "underline" in underlined.evaluate("e => getComputedStyle(e).textDecorationLine")
    # stderr keeps its own colour under ANSI's.
    expect(page.locator("#output .stderr .ansi-yellow-fg")).to_have_text("warning")


def test_a_hundred_thousand_lines_are_drawn_a_window_at_a_time(page: Page):
    assert run_code(page, "for i in range(100_000):\n    print(i)\n") == "succeeded"
    lines = page.locator("#output .term-line")
    drawn = lines.count()
    assert 0 < drawn < 1000, f"{drawn} lines in the DOM"
    # Pinned to the end as it streamed: the last line is in view.
    expect(lines.last).to_have_text("99999")
    expect(lines.last).to_be_in_viewport()
    # Scrolled to the top, the first lines are drawn; the scroll height is that of every line.
    height = page.evaluate("() => document.querySelector('#output').offsetHeight")
    line_height = lines.first.evaluate("e => e.getBoundingClientRect().height")
    assert abs(height - 100_000 * line_height) < 5 * line_height
    page.evaluate("() => { const o = document.querySelector('#output'); "
                  "let s = o.parentElement; while (s && s.scrollHeight <= s.clientHeight) s = s.parentElement; "
                  "s.scrollTop = 0; }")
    expect(page.locator("#output .term-line").first).to_have_text("0\n")
    # Copy takes every line, not only those drawn.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("#copy-output").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.count("\n") == 100_000 and copied.endswith("\n99999\n")


def test_a_figure_links_back_to_the_line_that_made_it(page: Page):
    code = ("import matplotlib.pyplot as plt\n"
            "\n"
            "plt.plot([1, 2, 3])\n"
            "plt.show()\n"
            "fig, ax = plt.subplots()\n"
            "bars = ax.bar([1, 2], [3, 4])\n")
    assert run_code(page, code) == "succeeded"
    page.locator("#tab-figures").click()
    links = page.locator("#panel-figures .figure-line")
    expect(links).to_have_text(["line 3", "line 5"])
    links.nth(1).click()
    assert page.evaluate("window.playground.editor.getPosition().lineNumber") == 5
    assert page.evaluate("document.activeElement.closest('#editor') !== null")
    assert output(page) == ""


def test_a_screen_reader_hears_the_output_as_the_terminal_shows_it(page: Page):
    """No escape codes in the announcer's words, and a line rewritten with \\r counted once."""
    page.evaluate("""() => {
        window.__said = [];
        const region = document.getElementById("announcer");
        new MutationObserver(() => region.textContent && window.__said.push(region.textContent))
            .observe(region, {childList: true, characterData: true, subtree: true});
    }""")
    code = (
        "print('\\x1b[31mred\\x1b[0m plain')\n"
        "for i in range(5):\n    print(f'\\rprogress {i}', end='')\n"
        "print()\n"
        "print('\\x1b[1;32mdone\\x1b[0m')\n"
    )
    assert run_code(page, code) == "succeeded"
    page.wait_for_function("() => window.__said.some(s => s.startsWith('Run '))")
    said = page.evaluate("() => window.__said")
    outputs = [s for s in said if s.startswith("Output")]
    assert outputs == ["Output (3 new lines): done"], said
    assert not any("\x1b" in s or "[0m" in s for s in said), said
