"""A notebook's page: cells run in one live session (Shift+Enter, Ctrl+Enter, Run stale), a later
cell reuses what an earlier one compiled, edits make the cells that read from them stale, the
keys of Jupyter's command mode, nothing lost on a reload, and the page passes axe."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import RUN_TIMEOUT_MS, SCREENS, TERMINAL, assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST = """\
import jax
import jax.numpy as jnp

@jax.jit
def scale(x):
    return x * 2.0 + 1.0

x = jnp.arange(4.0)
print("first", scale(x))
"""
SECOND = 'print("second", scale(x).sum())\n'


def open_notebook(page: Page, path: str = "/notebooks/new") -> None:
    page.goto(path)
    # A cell's editor, or a shared notebook's rendered Markdown (a link of Markdown cells has no editor).
    page.wait_for_function("() => window.notebook"
                           " && document.querySelector('.cell .monaco-editor, .cell .cell-markdown')")


def new_page(browser: Browser, live_stack, theme: str = "light") -> Page:
    context = browser.new_context(base_url=live_stack.url, viewport={"width": 1280, "height": 900},
                                  color_scheme=theme, reduced_motion="reduce")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc) + str(exc.stack)))
    page.errors = errors
    return page


@pytest.fixture
def nb(browser: Browser, live_stack) -> Page:
    page = new_page(browser, live_stack)
    open_notebook(page)
    yield page
    errors = page.errors
    page.context.close()
    assert errors == [], f"uncaught errors on the page: {errors}"


def cell(page: Page, i: int):
    return page.locator(".cell").nth(i)


def edit(page: Page, i: int, code: str) -> None:
    """Puts ``code`` in cell ``i`` and leaves the cursor in its editor."""
    page.evaluate("([i, code]) => window.notebook.setCode(i, code)", [i, code])
    cell(page, i).locator(".cell-editor .view-lines").click()


def code_then_markdown(page: Page, title: str, code: str, markdown: str) -> None:
    """A titled notebook whose first cell ran ``code`` and whose second is ``markdown`` (JS-escaped)."""
    page.locator("#notebook-title").fill(title)
    edit(page, 0, code)
    page.keyboard.press("Shift+Enter")
    assert wait_finished(page, 0) == "succeeded"
    page.evaluate(f"window.notebook.setCode(1, '{markdown}')")
    cell(page, 1).locator(".cell-editor .view-lines").click()
    page.keyboard.press("Escape")
    page.keyboard.press("m")


def create_link(page: Page, note: str | None = None, screenshot: str | None = None) -> str:
    """Share: the dialog (saying ``note`` of what goes with the link) makes it and is closed; the link."""
    page.locator("#share-button").click()
    dialog = page.locator("#share-dialog")
    expect(dialog).to_be_visible()
    if note:
        expect(dialog.locator("#share-run-note")).to_contain_text(note)
    dialog.get_by_role("button", name="Create link").click()
    link = dialog.locator("#share-link")
    expect(link).to_have_value(re.compile(r"/n/[0-9a-z]+$"))
    if screenshot:
        page.screenshot(path=SCREENS / screenshot)
    url = link.input_value()
    page.keyboard.press("Escape")
    return url


def status(page: Page, i: int) -> str:
    return cell(page, i).locator(".status-badge").get_attribute("data-status") or ""


def wait_finished(page: Page, i: int, previous_run: str | None = None) -> str:
    """Waits for cell ``i``'s run (another than ``previous_run``) to end: its status."""
    page.wait_for_function(
        """([i, terminal, previous]) => {
            const cell = document.querySelectorAll('.cell')[i];
            const badge = cell && cell.querySelector('.status-badge');
            return badge && terminal.includes(badge.dataset.status) && cell.dataset.phase === 'idle'
                && window.notebook.runId(i) !== previous;
        }""",
        arg=[i, list(TERMINAL), previous_run],
        timeout=RUN_TIMEOUT_MS,
    )
    return status(page, i)


def output(page: Page, i: int) -> str:
    return cell(page, i).locator("pre.output[id]").text_content() or ""


def stale(page: Page) -> list[bool]:
    return page.evaluate("window.notebook.stale()")


def test_cells_share_one_session_and_stale_cells_run_again(nb: Page):
    page = nb
    edit(page, 0, FIRST)
    page.keyboard.press("Shift+Enter")
    assert wait_finished(page, 0) == "succeeded"
    assert "first [1. 3. 5. 7.]" in output(page, 0)
    # Shift+Enter moved on: to a new cell at the end, in its editor.
    expect(page.locator(".cell")).to_have_count(2)
    expect(cell(page, 1)).to_have_attribute("data-active", "true")
    assert page.evaluate("document.activeElement.closest('.cell') === document.querySelectorAll('.cell')[1]")
    assert "scale" in page.evaluate("window.notebook.compiledNames(0)")

    edit(page, 1, SECOND)
    page.keyboard.press("Shift+Enter")
    assert wait_finished(page, 1) == "succeeded"
    assert "second 16.0" in output(page, 1)
    # The second cell called the first's function on the same shapes: nothing compiled again.
    assert "scale" not in page.evaluate("window.notebook.compiledNames(1)")
    cell(page, 1).locator(".tab[data-pane=compiled]").click()
    expect(cell(page, 1).locator("[data-pane=compiled].cell-panel")).to_be_visible()
    expect(cell(page, 1).locator(".compiled-row", has_text="scale")).to_have_count(0)
    # The first cell's names are no "undefined name" problem in the second.
    page.wait_for_timeout(1500)
    problems = page.evaluate("window.notebook.problems(1)")
    assert not [p for p in problems if "F821" in p], problems
    assert cell(page, 0).locator(".cell-count").text_content() == "[1]"
    assert cell(page, 1).locator(".cell-count").text_content() == "[2]"
    assert stale(page)[:2] == [False, False]
    page.screenshot(path=SCREENS / "notebook-two-cells.png", full_page=True)

    # Editing the first cell makes it and the cell that reads its names stale.
    edit(page, 0, FIRST.replace("x * 2.0 + 1.0", "x * 3.0"))
    page.wait_for_function("() => { const s = window.notebook.stale(); return s[0] && s[1]; }")
    expect(cell(page, 1).locator(".cell-stale")).to_contain_text("cell 1")
    expect(page.locator("#stale-count")).to_have_text("2")
    page.screenshot(path=SCREENS / "notebook-stale.png", full_page=True)

    # Running the second alone says its input is stale, and offers to run that first.
    first_runs = [page.evaluate("window.notebook.runId(0)"), page.evaluate("window.notebook.runId(1)")]
    edit(page, 1, SECOND)
    page.keyboard.press("Control+Enter")
    notice = cell(page, 1).locator(".cell-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("cell 1")
    page.screenshot(path=SCREENS / "notebook-upstream-notice.png", full_page=True)
    assert page.evaluate("window.notebook.runId(1)") == first_runs[1]  # nothing ran with the old values
    notice.get_by_role("button", name="Run stale first").click()
    assert wait_finished(page, 0, first_runs[0]) == "succeeded"
    assert wait_finished(page, 1, first_runs[1]) == "succeeded"
    assert "first [0. 3. 6. 9.]" in output(page, 0)
    assert "second 18.0" in output(page, 1)
    page.wait_for_function("() => !window.notebook.stale().some(Boolean)")

    # Edit again: Run stale runs exactly the two stale cells, in order.
    runs = [page.evaluate("window.notebook.runId(0)"), page.evaluate("window.notebook.runId(1)")]
    edit(page, 0, FIRST.replace("x * 2.0 + 1.0", "x * 4.0"))
    page.wait_for_function("() => { const s = window.notebook.stale(); return s[0] && s[1]; }")
    page.locator("#run-stale").click()
    assert wait_finished(page, 0, runs[0]) == "succeeded"
    assert wait_finished(page, 1, runs[1]) == "succeeded"
    assert "second 24.0" in output(page, 1)
    page.wait_for_function("() => !window.notebook.stale().some(Boolean)")
    expect(page.locator("#run-stale")).to_be_disabled()

    # Restart, once confirmed (it names what is lost): a fresh session, so every cell that ran is stale.
    page.locator("#restart-button").click()
    expect(page.locator("#restart-lost")).to_contain_text("scale")
    page.locator("#restart-confirm").click()
    page.wait_for_function("() => window.notebook.stale().slice(0, 2).every(Boolean)")
    expect(cell(page, 0).locator(".cell-stale")).to_contain_text("session")


def test_command_mode_adds_converts_moves_and_deletes_cells(nb: Page):
    page = nb
    edit(page, 0, "a = 1\n")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.classList.contains('cell')")
    page.keyboard.press("b")
    expect(page.locator(".cell")).to_have_count(2)
    expect(cell(page, 1)).to_be_focused()
    page.keyboard.press("a")
    expect(page.locator(".cell")).to_have_count(3)
    expect(cell(page, 1)).to_be_focused()
    page.keyboard.press("m")
    assert page.evaluate("window.notebook.types()") == ["code", "markdown", "code"]
    page.keyboard.press("y")
    assert page.evaluate("window.notebook.types()") == ["code", "code", "code"]
    page.keyboard.press("m")

    # Enter edits the Markdown; Shift+Enter shows it rendered (text stays text) and moves on.
    page.keyboard.press("Enter")
    page.evaluate("window.notebook.setCode(1, '# Notes\\nSome *emphasis* and <b>no markup</b> [a link](https://jax.dev).')")
    page.keyboard.press("Shift+Enter")
    rendered = cell(page, 1).locator(".cell-markdown")
    expect(rendered.locator("h3")).to_have_text("Notes")
    expect(rendered.locator("em")).to_have_text("emphasis")
    expect(rendered.locator("b")).to_have_count(0)
    expect(rendered).to_contain_text("<b>no markup</b>")
    expect(rendered.locator("a")).to_have_attribute("href", "https://jax.dev")

    # K/J and the arrows move the selection; the buttons move the cell.
    page.keyboard.press("Escape")
    cell(page, 2).click(position={"x": 20, "y": 60})
    page.keyboard.press("Escape")
    cell(page, 2).focus()
    page.keyboard.press("k")
    expect(cell(page, 1)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(cell(page, 0)).to_be_focused()
    page.keyboard.press("j")
    expect(cell(page, 1)).to_be_focused()
    cell(page, 1).get_by_role("button", name="Move cell up").click()
    assert page.evaluate("window.notebook.types()") == ["markdown", "code", "code"]
    assert page.evaluate("window.notebook.code(1)") == "a = 1\n"

    # D D deletes the selected cell; Z (or Undo) brings it back.
    cell(page, 1).focus()
    page.keyboard.press("d")
    page.keyboard.press("d")
    expect(page.locator(".cell")).to_have_count(2)
    expect(page.locator("#notebook-notice")).to_contain_text("deleted")
    page.keyboard.press("z")
    expect(page.locator(".cell")).to_have_count(3)
    assert page.evaluate("window.notebook.code(1)") == "a = 1\n"
    page.screenshot(path=SCREENS / "notebook-command-mode.png", full_page=True)

    # Everything is in the browser's storage: a reload brings the cells back as they were.
    page.wait_for_timeout(400)
    open_notebook(page, "/notebooks/new")
    expect(page.locator(".cell")).to_have_count(3)
    assert page.evaluate("window.notebook.types()") == ["markdown", "code", "code"]
    assert page.evaluate("window.notebook.code(1)") == "a = 1\n"
    expect(cell(page, 0).locator(".cell-markdown h3")).to_have_text("Notes")


def test_a_reload_keeps_the_cells_and_shows_their_outputs(nb: Page):
    page = nb
    page.locator("#notebook-title").fill("Kept notebook")
    edit(page, 0, "print('kept output')\n")
    page.keyboard.press("Control+Enter")
    assert wait_finished(page, 0) == "succeeded"
    page.wait_for_timeout(400)
    open_notebook(page, "/notebooks/new")
    expect(page.locator("#notebook-title")).to_have_value("Kept notebook")
    assert page.evaluate("window.notebook.code(0)") == "print('kept output')\n"
    expect(cell(page, 0).locator("pre.output[id]")).to_contain_text("kept output")
    # The session lives on: the cell is not stale after the reload.
    page.wait_for_function("() => document.querySelector('#session-state').dataset.phase === 'idle'")
    assert stale(page)[0] is False


def test_a_stopped_session_is_said_and_restore_runs_the_cells_again(nb: Page):
    page = nb
    edit(page, 0, FIRST)
    page.keyboard.press("Shift+Enter")
    assert wait_finished(page, 0) == "succeeded"
    edit(page, 1, SECOND)
    page.keyboard.press("Control+Enter")
    assert wait_finished(page, 1) == "succeeded"
    runs = [page.evaluate("window.notebook.runId(0)"), page.evaluate("window.notebook.runId(1)")]

    # The session ends behind the page's back: the page says so, with why, and offers Restore.
    session = page.evaluate("window.notebook.session()")
    assert page.request.delete(f"/api/sessions/{session}").ok
    state = page.locator("#session-state")
    expect(state).to_have_attribute("data-phase", "stopped")
    expect(page.locator("#session-text")).to_contain_text("Stopped")
    restore = page.locator("#restore-button")
    expect(restore).to_be_visible()
    page.wait_for_function("() => window.notebook.stale().slice(0, 2).every(Boolean)")
    page.screenshot(path=SCREENS / "notebook-stopped.png", full_page=True)

    restore.click()
    expect(page.locator("#session-text")).to_contain_text("Restoring")
    page.screenshot(path=SCREENS / "notebook-restoring.png", full_page=True)
    assert wait_finished(page, 0, runs[0]) == "succeeded"
    assert wait_finished(page, 1, runs[1]) == "succeeded"
    expect(state).to_have_attribute("data-phase", "idle")
    assert page.evaluate("window.notebook.session()") != session
    assert "second 16.0" in output(page, 1)
    page.wait_for_function("() => !window.notebook.stale().some(Boolean)")


def test_a_shared_notebook_shows_its_outputs_read_only_and_forks(nb: Page):
    page = nb
    code_then_markdown(page, "Shared squares", "print('squares', [i * i for i in range(4)])\n",
                       "## About\\nThe *squares*.")
    page.locator("#add-code").click()  # an empty cell at the end, which the link leaves out
    expect(page.locator(".cell")).to_have_count(3)

    url = create_link(page, note="output", screenshot="notebook-share-dialog.png")

    # The link: read-only, with the saved output, nothing run.
    open_notebook(page, url)
    expect(page.locator(".notebook-title-text")).to_have_text("Shared squares")
    expect(cell(page, 0).locator("pre.output[id]")).to_contain_text("squares [0, 1, 4, 9]")
    expect(cell(page, 1).locator(".cell-markdown h4")).to_have_text("About")
    expect(page.locator(".cell")).to_have_count(2)
    expect(page.locator("#run-all")).to_have_count(0)
    expect(page.locator("#export-link")).to_have_attribute("href", re.compile(r"/n/[0-9a-z]+\.ipynb$"))
    assert page.evaluate("window.notebook.session()") is None
    page.screenshot(path=SCREENS / "notebook-shared.png", full_page=True)

    # Fork: signed out, a draft in this browser, editable.
    page.get_by_role("button", name="Fork").click()
    # A draft in this browser, at an address of its own once it has words (test_teaching.py).
    page.wait_for_url(re.compile(r"/notebooks/(new|draft/[0-9a-z]{12})$"))
    # A cell's editor, or a shared notebook's rendered Markdown (a link of Markdown cells has no editor).
    page.wait_for_function("() => window.notebook"
                           " && document.querySelector('.cell .monaco-editor, .cell .cell-markdown')")
    expect(page.locator("#notebook-title")).to_have_value(re.compile("Shared squares"))
    assert page.evaluate("window.notebook.code(0)") == "print('squares', [i * i for i in range(4)])\n"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_notebook_page_passes_axe(browser: Browser, live_stack, theme: str):
    page = new_page(browser, live_stack, theme)
    try:
        open_notebook(page)
        assert_accessible(page, "a new notebook")
        edit(page, 0, FIRST + "import sys\nprint('a note', file=sys.stderr)\n")
        page.keyboard.press("Shift+Enter")
        assert wait_finished(page, 0) == "succeeded"
        edit(page, 1, "1 / 0\n")
        page.keyboard.press("Escape")
        page.keyboard.press("m")
        page.keyboard.press("b")
        edit(page, 2, SECOND)
        page.keyboard.press("Control+Enter")
        assert wait_finished(page, 2) == "succeeded"
        edit(page, 0, FIRST.replace("2.0", "5.0"))
        page.wait_for_function("() => window.notebook.stale()[0]")
        page.keyboard.press("Escape")
        assert_accessible(page, "after runs, with a stale cell")
        cell(page, 0).locator(".tab[data-pane=compiled]").click()
        assert_accessible(page, "a cell's compiled code")
        page.screenshot(path=SCREENS / f"notebook-{theme}.png", full_page=True)
        page.locator("#share-button").click()
        expect(page.locator("#share-dialog")).to_be_visible()
        assert_accessible(page, "the share dialog")
        page.keyboard.press("Escape")
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(300)
        page.screenshot(path=SCREENS / f"notebook-phone-{theme}.png", full_page=True)
        wide = page.evaluate("[...document.querySelectorAll('body *')]"
                             ".filter(e => e.getBoundingClientRect().right > innerWidth + 1)"
                             ".slice(0, 8).map(e => e.className || e.tagName)")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), wide
        assert_accessible(page, "at phone size")
        assert page.errors == []
    finally:
        page.context.close()


def test_cells_go_on_the_sessions_socket_not_by_post(nb: Page):
    """The page sends its cells on the session's websocket (no POST .../cells, no run socket of
    their own), and their events come back on it: shown as a posted cell's are."""
    page = nb
    posted: list[str] = []
    run_sockets: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" and r.url.endswith("/cells") else None)
    page.on("websocket", lambda ws: run_sockets.append(ws.url) if "/ws/runs/" in ws.url else None)
    edit(page, 0, FIRST)
    page.keyboard.press("Shift+Enter")
    assert wait_finished(page, 0) == "succeeded"
    assert "first [1. 3. 5. 7.]" in output(page, 0)
    edit(page, 1, SECOND)
    page.keyboard.press("Control+Enter")
    assert wait_finished(page, 1) == "succeeded"
    assert "second 16.0" in output(page, 1)
    assert page.evaluate("window.notebook.sent()") == {"socket": 2, "post": 0}
    assert posted == [] and run_sockets == [], (posted, run_sockets)
