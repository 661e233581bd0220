"""What the browser tests do with the playground page: open it, put code in, wait for a run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENS = Path("/tmp/screens")
# A run's first event can wait for a runner to warm up (about a second, more on a loaded box).
RUN_TIMEOUT_MS = 60_000
TERMINAL = ("succeeded", "failed", "timed_out", "cancelled", "limit_exceeded", "lost")


def open_playground(page: Page, reload: bool = False, path: str = "/") -> None:
    if reload:
        page.reload()
    else:
        page.goto(path)
    page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
    expect(page.locator("#device-select")).to_be_enabled()


@contextmanager
def playground_in(browser: Browser, live_stack, locale: str, height: int = 860, width: int = 1280,
                  **options) -> Iterator[Page]:
    """The playground in a fresh profile whose browser asks for ``locale`` (Accept-Language picks
    the page's language), editor ready (``options``: the browser context's others, such as
    ``reduced_motion``). Fails on any uncaught script error."""
    context = browser.new_context(base_url=live_stack.url, locale=locale, viewport={"width": width, "height": height},
                                  color_scheme="light", **options)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_playground(page)
        yield page
    finally:
        context.close()
    assert errors == [], f"uncaught errors on the page: {errors}"


def set_code(page: Page, code: str) -> None:
    page.evaluate("code => window.playground.setCode(code)", code)


def get_code(page: Page) -> str:
    return page.evaluate("window.playground.getCode()")


def run_status(page: Page) -> str:
    """The run's status as the API names it (the badge shows words: "timed out")."""
    return page.get_attribute("#run-status", "data-status") or ""


def wait_until_finished(page: Page, timeout_ms: int = RUN_TIMEOUT_MS) -> str:
    page.wait_for_function(
        "terminal => terminal.includes(document.querySelector('#run-status').dataset.status)",
        arg=list(TERMINAL),
        timeout=timeout_ms,
    )
    return run_status(page)


def run_code(page: Page, code: str, timeout_ms: int = RUN_TIMEOUT_MS) -> str:
    """Put ``code`` in the editor, run it with Ctrl+Enter and wait: its final status."""
    start_code(page, code)
    return wait_until_finished(page, timeout_ms)


def start_code(page: Page, code: str) -> None:
    set_code(page, code)
    page.keyboard.press("Control+Enter")


def output(page: Page) -> str:
    return page.locator("#output").text_content()


AXE = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.2 A and AA, and axe's best practices (landmarks, one h1, headings in order...).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]


def axe_violations(page: Page) -> list[str]:
    """axe-core's violations on the page as it is now, one line per element: once what was
    changing has settled (a colour scheme just switched reaches the editor's theme through a media
    listener, a frame or two later, and a transition runs its course; checked mid-way, the
    toolbar's text of one scheme stood on the editor's background of the other)."""
    page.evaluate("""() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
        Promise.all(document.getAnimations().map(a => a.finished.catch(() => null))).then(done))))""")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        # Evaluated by the test harness, not loaded by the page: the page's CSP stays as it is.
        page.evaluate(AXE.read_text())
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        AXE_TAGS,
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {node['target']}: "
        + " ".join(node.get("failureSummary", "").split())[:300]
        for v in result["violations"]
        for node in v["nodes"]
    ]


def assert_accessible(page: Page, state: str) -> None:
    problems = axe_violations(page)
    assert problems == [], f"axe found problems ({state}):\n" + "\n".join(problems)
