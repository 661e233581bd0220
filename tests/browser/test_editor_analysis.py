"""The editor knows JAX while you type, in Chromium, at a desktop's, a laptop's and a phone's
width: completion of module members with their signature, signature help inside a call, docs on
hover with the API page linked, and problems marked a moment after a pause, in the playground's
editor and a shared snippet's; the page stays axe-clean with each widget open. The analysers are
the real service (executor/analyser) on the suite's Redis, as an executor node starts them."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from .playground import SCREENS, assert_accessible, open_playground, set_code
from .test_courses import browser_as, off_the_loop, open_assignment

WIDTHS = [(1440, 900), (1024, 768), (390, 844)]
HEAD = "import jax\nimport jax.numpy as jnp\n\n"


@pytest.fixture(scope="module")
def analysers(live_stack):
    import redis

    from executor.analyser import service, wire

    running = service.Service(live_stack.env["REDIS_URL"], processes=1).start()
    client = redis.Redis.from_url(live_stack.env["REDIS_URL"])
    deadline = time.monotonic() + 300
    while not client.exists(wire.alive_key()) or not running.analysers[0].ready:
        assert time.monotonic() < deadline, "the analyser did not start"
        time.sleep(0.5)
    yield running
    running.stop()


def type_at_end(page: Page, text: str) -> None:
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text, delay=40)


def point_at(page: Page, line: int, column: int) -> tuple[float, float]:
    return page.evaluate("""([line, column]) => {
        const editor = window.playground.editor;
        const at = editor.getScrolledVisiblePosition({lineNumber: line, column});
        const box = editor.getDomNode().getBoundingClientRect();
        return [box.left + at.left + 3, box.top + at.top + at.height / 2];
    }""", [line, column])


def hover_at(page: Page, line: int, column: int) -> None:
    """The mouse comes to rest over that place, as a person's does."""
    x, y = point_at(page, line, column)
    page.mouse.move(x - 6, y)
    page.mouse.move(x, y, steps=4)


def hover_shows(page: Page, line: int, column: int, text: str):
    """The hover at that place, once it shows ``text``. A person whose hover did not come moves
    the mouse away and back; so does this, once, after 8 s, saying on stderr what the editor's
    requests were answered meanwhile (the hover's own answer is in the stack's log)."""
    answers: list[str] = []

    def on_response(response) -> None:
        if "/api/analyse" in response.url:
            answers.append(f"{response.status} {(response.request.post_data or '')[:60]!r}")

    page.on("response", on_response)
    try:
        hover_at(page, line, column)
        shown = page.locator(".monaco-hover:not(.hidden)").filter(has_text=text)
        try:
            expect(shown).to_be_visible(timeout=8_000)
        except AssertionError:
            import sys

            print(f"hover {text!r} not shown after 8 s; the analyser's answers meanwhile: {answers}; "
                  f"hovers in the page: {page.locator('.monaco-hover').count()}", file=sys.stderr)
            page.mouse.move(1, 1)
            hover_at(page, line, column)
            expect(shown).to_be_visible(timeout=10_000)
    finally:
        page.remove_listener("response", on_response)
    return shown


def exercise(page: Page, width: int, where: str) -> None:
    set_code(page, HEAD)
    type_at_end(page, "jnp.ein")
    suggestions = page.locator(".suggest-widget.visible")
    expect(suggestions).to_contain_text("einsum", timeout=15_000)
    expect(suggestions).to_contain_text("einsum_path")
    # Each row shows its signature; the details (Ctrl+Space) add the first lines of the doc.
    expect(page.locator(".suggest-widget.visible .monaco-list-row.focused")).to_contain_text(
        "einsum(subscript", timeout=10_000)
    page.keyboard.press("Control+Space")
    expect(page.locator(".suggest-details-container .suggest-details")).to_contain_text(
        "Einstein summation", timeout=10_000)
    assert_accessible(page, f"suggestions open, {where} at {width}px")
    page.screenshot(path=str(SCREENS / f"editor-completion-{where}-{width}.png"))
    page.keyboard.press("Tab")  # takes the suggestion
    page.keyboard.type("(", delay=40)
    hints = page.locator(".parameter-hints-widget.visible")
    expect(hints).to_contain_text("subscript", timeout=15_000)
    expect(hints.locator(".parameter.active")).to_have_text("subscript")
    assert_accessible(page, f"signature help open, {where} at {width}px")
    page.keyboard.type("'i,i', y", delay=40)
    expect(hints.locator(".parameter.active")).to_have_text("operands", timeout=10_000)
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")

    # Docs on hover, with the API page linked.
    set_code(page, HEAD + "y = jnp.einsum('i,i', x, x)\n")
    hover = hover_shows(page, 4, 10, "Einstein summation")
    link = hover.locator("a", has_text="docs.jax.dev")
    expect(link).to_have_attribute("href", "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.einsum.html")
    assert_accessible(page, f"hover open, {where} at {width}px")
    page.screenshot(path=str(SCREENS / f"editor-hover-{where}-{width}.png"))
    page.mouse.move(1, 1)

    # Problems, a moment after a pause: an undefined name, marked before any run.
    set_code(page, HEAD + "print(undefined_name)\nimport os\n")
    expect(page.locator("#editor .squiggly-error")).to_have_count(1, timeout=10_000)
    hover_at(page, 4, 10)
    expect(page.locator(".monaco-hover:not(.hidden)").filter(has_text="Undefined name `undefined_name`")
           ).to_be_visible(timeout=10_000)
    page.mouse.move(1, 1)
    set_code(page, HEAD + "print(jnp.ones(3))\n")
    expect(page.locator("#editor .squiggly-error")).to_have_count(0, timeout=10_000)


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_playground_editor_knows_jax(analysers, page: Page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    exercise(page, width, "playground")


def test_a_shared_snippets_editor_knows_jax_too(analysers, page: Page, live_stack):
    status, answer = live_stack.post("/api/snippets", {"code": HEAD + "print(1)\n", "title": "completion"})
    assert status == 201, answer
    open_playground(page, path=answer["url"])
    page.set_viewport_size({"width": 1440, "height": 900})
    exercise(page, 1440, "snippet")


SHAPED = ("import jax.numpy as jnp\nx = 1\ny = jnp.ones((1000, 1000))\n"
          "params = {'w': jnp.zeros((784, 512)), 'b': jnp.zeros(512)}\n")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_hovering_a_name_shows_what_it_held_when_the_run_ended(analysers, page: Page, width, height):
    from .playground import run_code

    page.set_viewport_size({"width": width, "height": height})
    assert run_code(page, SHAPED) == "succeeded"
    hover_at(page, 3, 1)
    shown = page.locator(".monaco-hover:not(.hidden)").filter(has_text="y: f32[1000,1000]")
    expect(shown).to_be_visible(timeout=15_000)
    expect(shown).to_contain_text("When the last run ended, assigned on line 3.")
    assert_accessible(page, f"a name's shape on hover at {width}px")
    page.screenshot(path=str(SCREENS / f"editor-shape-{width}.png"))
    page.mouse.move(1, 1)
    hover_at(page, 4, 2)
    expect(page.locator(".monaco-hover:not(.hidden)").filter(
        has_text="params: {'w': f32[784,512], 'b': f32[512]}")).to_be_visible(timeout=15_000)
    page.mouse.move(1, 1)
    # The code above y changes: what it held may differ now, and the hover says so.
    page.evaluate("() => window.playground.editor.executeEdits('t', [{range: {startLineNumber: 2, startColumn: 5, "
                  "endLineNumber: 2, endColumn: 6}, text: '2'}])")
    hover_at(page, 3, 1)
    expect(page.locator(".monaco-hover:not(.hidden)").filter(has_text="y: f32[1000,1000]")).to_contain_text(
        "has changed since", timeout=15_000)


def test_a_links_reader_hovers_the_shapes_of_its_saved_run(analysers, browser, live_stack):
    status, created = live_stack.post("/api/runs", {"code": SHAPED})
    assert status == 201, created
    assert live_stack.wait_finished(created["id"])["status"] == "succeeded"
    status, shared = live_stack.post("/api/snippets", {"code": SHAPED, "title": "shapes", "run": created["id"]})
    assert status == 201 and shared["run"] == created["id"], shared
    context = browser.new_context(base_url=live_stack.url, viewport={"width": 1440, "height": 900})
    reader = context.new_page()
    try:
        open_playground(reader, path=shared["url"])
        hover_at(reader, 3, 1)
        expect(reader.locator(".monaco-hover:not(.hidden)").filter(has_text="y: f32[1000,1000]")).to_be_visible(
            timeout=15_000)
    finally:
        context.close()


@pytest.mark.django_db(transaction=True)
def test_an_assignments_editor_knows_jax_too(analysers, browser, live_stack, django_user_model):
    """A student's editor on an assignment's page: the same completion, signatures, hover and
    problems, for the runtime the assignment runs on."""
    from courses.actions.assignments import do_create_assignment
    from courses.actions.courses import do_create_course
    from courses.actions.members import do_join_course

    teacher = django_user_model.objects.create_user("teacher", password="a long pass phrase")
    student = django_user_model.objects.create_user("student", password="a long pass phrase")
    course = off_the_loop(do_create_course, teacher, "Editing JAX")
    off_the_loop(do_join_course, course, student)
    assignment = off_the_loop(do_create_assignment, course, title="Einsum", starter_code=HEAD, device="cpu",
                              runtime="jax-0.12.0.1")
    with browser_as(browser, live_stack, student) as page:
        open_assignment(page, assignment.pk)
        assert page.evaluate("JSON.parse(document.getElementById('assignment-data').textContent).runtime") \
            == assignment.runtime == "jax-0.12.0.1"
        exercise(page, 1440, "assignment")
