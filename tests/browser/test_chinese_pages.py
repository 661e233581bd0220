"""Every page in Simplified Chinese, as a reader of the Chinese article meets it: Chromium with a
zh-CN browser, walking each page and state a person reaches. In each state no English text is left
(visible text, what a screen reader reads, tooltips, placeholders, the title), axe passes, the page
fits a phone's width, and no request goes to another host from the first paint through a run.

What may stay in Latin letters: code (editors, output, compiled text), identifiers, units, and the
names of products and formats (``ALLOWED``); what a person typed (a course's title, a user name)
is allowed by the test that typed it. Screenshots go to /tmp/screens/zh-*.png.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from urllib.parse import urlparse

import pytest
from django.test import Client
from playwright.sync_api import Browser, Page, expect

from tests import people as people_fixtures

from .playground import SCREENS, assert_accessible, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

_fresh_rate_limits = people_fixtures.fresh_rate_limits

# Names of products, formats, units and code that a Chinese page writes as they are.
ALLOWED = {
    "jax", "playground", "numpy", "xla", "hlo", "stablehlo", "jaxpr", "jaxprs", "python", "monaco", "perfetto",
    "chrome", "gpu", "gpus", "cpu", "cpus", "tpu", "tpus", "flops", "flop", "api", "url", "json", "markdown",
    "ipynb", "py", "jit", "grad", "vmap", "pmap", "shard_map", "jnp", "lax", "np", "matplotlib", "english",
    "vim", "emacs", "vs", "code", "colab", "jupyter", "ctrl", "shift", "alt", "cmd", "enter", "esc", "tab",
    "home", "end", "pgup", "pgdn", "ms", "µs", "ns", "kb", "mb", "gb", "kib", "mib", "gib", "tib", "tb", "id",
    "ok", "utf", "http", "https", "ssh", "csv", "png", "svg", "gz", "sdk", "mcp", "token", "bearer", "pip",
    "github", "h100", "h200", "a100", "tfrt", "openapi", "stdin", "stdout", "stderr", "rss", "wasd", "ruff",
}
# Single Latin letters are keys (W, A, S, D), axes or sides (A, B): allowed.
WORD = re.compile(r"[A-Za-z][A-Za-z'’]*[A-Za-z]")
# Code, editors, what the run printed, and what a person wrote: not the page's own words.
SKIP = ("script, style, noscript, pre, code, kbd, samp, .monaco-editor, .monaco-aria-container, "
        "[translate=no], .user-content, .snippet-description, .markdown-body, .cell-markdown, .output, .error-title")

COLLECT = """(skip) => {
    const seen = [];
    const named = ['aria-label', 'title', 'placeholder', 'alt', 'aria-description', 'aria-roledescription',
                   'aria-valuetext'];
    const where = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.');
    const shown = (e) => e && e.checkVisibility({visibilityProperty: true}) && !e.closest(skip);
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const text = n.textContent.trim();
        if (text && shown(n.parentElement)) seen.push([where(n.parentElement), text]);
    }
    for (const e of document.body.querySelectorAll(named.map((a) => `[${a}]`).join(', ') + ', option')) {
        if (!shown(e.tagName === 'OPTION' ? e.closest('select') : e)) continue;
        for (const attr of named) {
            const value = e.getAttribute(attr);
            if (value && value.trim()) seen.push([e.tagName.toLowerCase() + '[' + attr + ']', value.trim()]);
        }
        if (e.tagName === 'OPTION') seen.push(['option', e.textContent.trim()]);
    }
    seen.push(['title', document.title]);
    return seen;
}"""


def is_code_like(word: str) -> bool:
    return "_" in word or any(c.isdigit() for c in word) or (word[0].islower() and any(c.isupper() for c in word))


def english_left(page: Page, allowed: set[str] = frozenset()) -> list[str]:
    """The page's texts (and accessible names) that still hold an English word."""
    left = []
    for where, text in page.evaluate(COLLECT, SKIP):
        # Identifiers and JSON written in code form (jax.numpy, x.at[i].set, TFRT_CPU_0,
        # {"compile_cache": false}) are code.
        prose = re.sub(r"\S*[._/@:=()\[\]{}]\S*", " ", text)
        words = [w for w in WORD.findall(prose)
                 if w.lower() not in ALLOWED and w.lower() not in allowed and not is_code_like(w)]
        if words:
            left.append(f"{where}: {text[:120]!r} ({', '.join(words[:5])})")
    return sorted(set(left))


def fits_a_phone(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    wider = page.evaluate("""() => document.documentElement.scrollWidth <= innerWidth ? [] :
        [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1
            && !e.closest('.grid-scroll, .monaco-editor, .tabs'))
          .slice(0, 8).map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.'))""")
    assert wider == [], f"the page scrolls sideways at phone width: {wider}"
    page.set_viewport_size({"width": 1280, "height": 860})


class Reader:
    """A zh-CN browser: each state it is asked to check must be Chinese, accessible, and fetched
    from this site alone."""

    def __init__(self, page: Page, origin: str, allowed: set[str]):
        self.page, self.origin, self.allowed = page, origin, allowed
        self.elsewhere: list[str] = []
        self.errors: list[str] = []
        page.on("request", self._request)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def _request(self, request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("data", "blob", "about"):
            return
        if f"{url.scheme}://{url.netloc}" != self.origin:
            self.elsewhere.append(request.url)

    def check(self, state: str, *, phone: bool = False) -> None:
        page = self.page
        assert page.evaluate("document.documentElement.lang") == "zh-Hans", state
        left = english_left(page, self.allowed)
        assert left == [], f"English left on the page ({state}):\n" + "\n".join(left)
        assert_accessible(page, f"{state} (zh-Hans)")
        if phone:
            fits_a_phone(page)
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENS / f"zh-{re.sub(r'[^a-z0-9]+', '-', state.lower()).strip('-')}.png")


@contextmanager
def chinese_reader(browser: Browser, live_stack, user=None, allowed: set[str] = frozenset()):
    context = browser.new_context(base_url=live_stack.url, locale="zh-CN", viewport={"width": 1280, "height": 860},
                                  color_scheme="light", reduced_motion="reduce")
    if user is not None:
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_stack.url}])
    page = context.new_page()
    reader = Reader(page, live_stack.url.rstrip("/"), set(allowed))
    try:
        yield reader
    finally:
        context.close()
    assert reader.elsewhere == [], f"requests to other hosts: {reader.elsewhere}"
    assert reader.errors == [], f"uncaught errors: {reader.errors}"


def open_editor_page(page: Page, path: str = "/") -> None:
    page.goto(path)
    page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
    expect(page.locator("#device-select")).to_be_enabled()


# Output on both streams, two compilations, a timing, a figure, and an error explained at the end.
EVERY_PANE = """\
import sys
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

f = jax.jit(lambda x: jnp.sin(x) * 2)
g = jax.jit(lambda x: x @ x)
print("值:", f(jnp.arange(3.0)))
print(g(jnp.ones((3, 3))))
print("提示", file=sys.stderr)
%timeit -n 5 -r 3 f(jnp.arange(3.0)).block_until_ready()
plt.plot([1, 2, 3])
plt.show()

@jax.jit
def add_one(x):
    return x + 1

for n in range(1, 4):
    add_one(jnp.ones(n))  # compiled again for each shape, and warned about

@jax.jit
def positive(x):
    if x > 0:
        return x
    return -x

positive(1.0)
"""


def test_the_playground_speaks_chinese_in_every_state(browser: Browser, live_stack):
    with chinese_reader(browser, live_stack) as reader:
        page = reader.page
        open_editor_page(page)
        reader.check("the playground as it opens", phone=True)
        for menu in ("examples", "libraries"):
            page.locator(f"#{menu}-button").click()
            expect(page.locator(f"#{menu}-menu")).to_be_visible()
            reader.check(f"the {menu} menu")
            page.keyboard.press("Escape")

        page.locator("#shortcuts-button").click()
        expect(page.locator("#shortcuts-dialog")).to_be_visible()
        reader.check("the keyboard shortcuts")
        page.keyboard.press("Escape")

        set_code(page, EVERY_PANE)
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "failed"
        # The explanation of the tracer's bool, in Chinese.
        expect(page.locator(".error-explanation").first).to_contain_text("追踪值")
        for tab in ("output", "compiled", "timing", "figures"):
            page.locator(f"#tab-{tab}").click()
            if tab == "compiled":  # why add_one compiled again, and the loop's warning, in Chinese
                expect(page.locator(".row-reason").first).to_contain_text("参数 x 的形状变了")
                expect(page.locator(".row-warning").first).to_contain_text("的循环里编译了 3 次")
            reader.check(f"after a run, the {tab} tab")
        page.locator("#tab-output").click()
        reader.check("after a run", phone=True)

        page.locator("#share-button").click()
        expect(page.locator("#share-dialog")).to_be_visible()
        reader.check("the share dialog")
        page.locator("#share-create").click()
        expect(page.locator("#share-link")).to_have_value(re.compile(r"/s/"))
        reader.check("the share dialog with its link")
        slug = page.locator("#share-link").input_value().rsplit("/", 1)[-1]
        page.keyboard.press("Escape")

        page.locator("#compare-button").click()
        expect(page.locator("#compare-dialog")).to_be_visible()
        reader.check("the compare dialog")
        page.keyboard.press("Escape")

        # A profiled run and its timeline.
        page.locator("#profile-toggle").click()
        set_code(page, "import jax.numpy as jnp\nprint(jnp.ones((64, 64)) @ jnp.ones((64, 64)))\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"
        page.locator("#tab-timeline").click()
        page.wait_for_function("() => window.playground.timelineStats().firstDrawMs !== null", timeout=60_000)
        reader.check("a profiled run's timeline")

        # A full-width parenthesis typed with a Chinese input method, explained with its place.
        page.locator("#profile-toggle").click()
        set_code(page, "print（1）\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "failed"
        expect(page.locator(".error-explanation").first).to_contain_text("第 1 行第 6 列")
        reader.check("a full-width parenthesis explained")

        open_editor_page(page, f"/s/{slug}")
        reader.check("a snippet's page", phone=True)
        open_editor_page(page, f"/embed/{slug}")
        reader.check("an embed")
        page.goto("/no-such-page")
        reader.check("the page not found")


def test_the_language_is_chosen_switched_and_remembered(browser: Browser, live_stack, django_user_model):
    context = browser.new_context(base_url=live_stack.url, locale="en-US")
    try:
        page = context.new_page()
        open_editor_page(page)
        assert page.evaluate("document.documentElement.lang") == "en"
        expect(page.locator("#run-button")).to_contain_text("Run")
        page.get_by_role("button", name="中文").click()
        page.wait_for_function("() => document.documentElement.lang === 'zh-Hans'")
        expect(page.locator("#run-button")).to_contain_text("运行")
        open_editor_page(page)
        assert page.evaluate("document.documentElement.lang") == "zh-Hans", "the choice is kept by the browser"
        page.get_by_role("button", name="English").click()
        page.wait_for_function("() => document.documentElement.lang === 'en'")
        expect(page.locator("#run-button")).to_contain_text("Run")
    finally:
        context.close()

    # A signed-in person's choice follows them to a browser that asks for English.
    user = django_user_model.objects.create_user("lin", password=people_fixtures.PASSWORD)
    client = Client()
    client.force_login(user)
    assert client.post("/language", {"language": "zh-hans", "next": "/"}).status_code in (302, 303)
    context = browser.new_context(base_url=live_stack.url, locale="en-US")
    try:
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_stack.url}])
        page = context.new_page()
        open_editor_page(page)
        assert page.evaluate("document.documentElement.lang") == "zh-Hans"
    finally:
        context.close()


FIRST = """\
import jax
import jax.numpy as jnp

@jax.jit
def scale(x):
    return x * 2.0 + 1.0

x = jnp.arange(4.0)
print("第一个", scale(x))
"""


def test_a_notebook_speaks_chinese(browser: Browser, live_stack, django_user_model):
    user = django_user_model.objects.create_user("mei", password=people_fixtures.PASSWORD)
    with chinese_reader(browser, live_stack, user, allowed={"mei"}) as reader:
        page = reader.page
        page.goto("/notebooks/new")
        page.wait_for_function("() => window.notebook && document.querySelector('.cell .monaco-editor')")
        reader.check("a new notebook", phone=True)
        page.evaluate("code => window.notebook.setCode(0, code)", FIRST)
        page.locator(".cell").nth(0).locator(".cell-editor .view-lines").click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("() => { const b = document.querySelector('.cell .status-badge');"
                               " return b && ['succeeded', 'failed', 'lost', 'limit_exceeded', 'timed_out',"
                               " 'cancelled'].includes(b.dataset.status); }", timeout=90_000)
        badge = page.locator(".cell .status-badge").first
        assert badge.get_attribute("data-status") == "succeeded", page.locator(".cell").first.inner_text()
        page.evaluate("code => window.notebook.setCode(1, code)", 'print("第二个", scale(x).sum())\n')
        page.evaluate("code => window.notebook.setCode(0, code)", FIRST.replace("2.0", "5.0"))
        page.wait_for_function("() => window.notebook.stale()[0]")
        page.keyboard.press("Escape")
        reader.check("a notebook after a run, with a stale cell")
        page.locator("#share-button").click()
        expect(page.locator("#share-dialog")).to_be_visible()
        reader.check("a notebook's share dialog")
        page.keyboard.press("Escape")
        page.goto("/notebooks/")
        reader.check("my notebooks")


def test_the_account_pages_speak_chinese(browser: Browser, live_stack, django_user_model):
    with chinese_reader(browser, live_stack) as reader:
        for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password_reset/"):
            reader.page.goto(path)
            reader.check(f"signed out {path}", phone=True)

    user = django_user_model.objects.create_user("wang", email="wang@example.org", password=people_fixtures.PASSWORD)
    with chinese_reader(browser, live_stack, user, allowed={"wang"}) as reader:
        page = reader.page
        open_editor_page(page)
        set_code(page, "print('我的')\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"
        page.locator("#account-button").click()
        expect(page.locator("#account-menu")).to_be_visible()
        reader.check("the account menu")
        for path in ("/accounts/", "/me/snippets/", "/me/runs/", "/accounts/password_change/"):
            page.goto(path)
            reader.check(f"signed in {path}", phone=True)


CHECKS = """\
from jaxplay.grading import allclose, check
check("三的平方", allclose(square(3.0), 9.0), points=2)
"""


def test_the_course_pages_speak_chinese(browser: Browser, live_stack, django_user_model):
    from courses.actions.assignments import do_create_assignment
    from courses.actions.courses import do_create_course
    from courses.actions.members import do_join_course

    from .test_courses import off_the_loop

    teacher = django_user_model.objects.create_user("zhang", password=people_fixtures.PASSWORD)
    student = django_user_model.objects.create_user("li", password=people_fixtures.PASSWORD)
    course = off_the_loop(do_create_course, teacher, "JAX 入门")
    off_the_loop(do_join_course, course, student)
    assignment = off_the_loop(do_create_assignment, course, title="平方", description="写一个 **square(x)**。",
                              starter_code="def square(x):\n    ...\n", checks=CHECKS, device="cpu")
    names = {"zhang", "li"}

    with chinese_reader(browser, live_stack, student, allowed=names) as reader:
        page = reader.page
        page.goto("/courses/")
        reader.check("my courses, a student", phone=True)
        page.goto(f"/courses/{course.pk}/")
        reader.check("a course, a student", phone=True)
        page.goto(f"/assignments/{assignment.pk}/")
        page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        reader.check("an assignment, a student")
        set_code(page, "def square(x):\n    return x * x\n")
        page.locator("#run-button").click()
        assert wait_until_finished(page) == "succeeded"
        reader.check("an assignment after a run", phone=True)

    with chinese_reader(browser, live_stack, teacher, allowed=names) as reader:
        page = reader.page
        page.goto(f"/courses/{course.pk}/")
        reader.check("a course, its teacher", phone=True)
        page.goto(f"/assignments/{assignment.pk}/")
        page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        reader.check("an assignment, its teacher")
        page.goto(f"/courses/{course.pk}/dashboard")
        expect(page.locator("#live-state")).to_have_attribute("data-state", "live")
        reader.check("the dashboard", phone=True)

    with chinese_reader(browser, live_stack, django_user_model.objects.create_user(
            "zhao", password=people_fixtures.PASSWORD), allowed={"zhao"}) as reader:
        reader.page.goto(f"/courses/join/{course.join_code}")
        reader.check("joining a course", phone=True)
