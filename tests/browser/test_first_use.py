"""What a person meets first, tried at 1440, 1024 and 390 px where the layout matters, each page
still axe-clean: output that wraps (and a toggle that keeps lines as printed), a Reset that can be
undone, a failed or timed-out run shown where it says why, an embed at a blog's width, the
instructor's authoring screen, courses found from the home page and from a join link, a phone's
top bar and the result tabs' focus ring.

Screenshots go to /tmp/screens/first-use-*.png for a person to look at.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import people as people_fixtures

from .playground import (SCREENS, assert_accessible, get_code, open_playground, run_code, set_code,
                         wait_until_finished)
from .test_courses import browser_as, off_the_loop, open_assignment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"wide": (1440, 900), "laptop": (1024, 768), "phone": (390, 844)}
LONG = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters, spaces to wrap at
TABLE_ROW = "| " + " | ".join(f"column {i:02d}" for i in range(14)) + " |"


_fresh_rate_limits = people_fixtures.fresh_rate_limits


def new_page(browser: Browser, live_stack, size: str = "wide", theme: str = "light") -> Page:
    width, height = SIZES[size]
    context = browser.new_context(base_url=live_stack.url, viewport={"width": width, "height": height},
                                  color_scheme=theme, reduced_motion="reduce")
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    return page


def shoot(page: Page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENS / f"first-use-{name}.png")


def box(page: Page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not shown"
    return found


def overlaps(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


# 1. Output wraps by default; the toggle keeps lines as printed, remembered ---------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_output_wraps_long_lines_and_the_toggle_keeps_a_table_unwrapped(browser: Browser, live_stack, size: str):
    page = new_page(browser, live_stack, size)
    try:
        open_playground(page)
        assert run_code(page, f"print({LONG!r})\nprint({TABLE_ROW!r})\n") == "succeeded"
        output = page.locator("#output")
        expect(output).to_contain_text("word059")
        expect(page.locator("#wrap-output")).to_have_attribute("aria-pressed", "true")
        sizes = page.evaluate("""() => { const o = document.querySelector('#output');
            return {scroll: o.scrollWidth, client: o.clientWidth,
                    lines: o.getBoundingClientRect().height / parseFloat(getComputedStyle(o).lineHeight)}; }""")
        assert sizes["scroll"] <= sizes["client"] + 1, sizes  # nothing hidden sideways
        assert round(sizes["lines"]) > 2, sizes  # the two lines wrapped
        # Wrap and Copy sit beside the text, never over it.
        text = box(page, "#output")
        for button in ("#copy-output", "#wrap-output"):
            assert not overlaps(box(page, button), text), button
        assert_accessible(page, f"wrapped output at {size}")
        shoot(page, f"output-wrapped-{size}")

        # Off: a table printed as text stays a table (it scrolls sideways), after a reload too.
        page.locator("#wrap-output").click()
        expect(page.locator("#wrap-output")).to_have_attribute("aria-pressed", "false")
        assert page.evaluate("(() => { const o = document.querySelector('#output');"
                             " return o.scrollWidth > o.clientWidth; })()")
        open_playground(page, reload=True)
        assert run_code(page, f"print({TABLE_ROW!r})\n") == "succeeded"
        expect(page.locator("#wrap-output")).to_have_attribute("aria-pressed", "false")
        rows = page.evaluate("""() => { const o = document.querySelector('#output');
            return o.getBoundingClientRect().height / parseFloat(getComputedStyle(o).lineHeight); }""")
        assert round(rows) == 1
        assert not overlaps(box(page, "#copy-output"), box(page, "#output"))
        assert_accessible(page, f"unwrapped output at {size}")
        assert page.errors == []
    finally:
        page.context.close()


# 2. Reset is undoable, and the code it replaced stays a draft ------------------------------------

@pytest.mark.parametrize("size", ["wide", "phone"])
def test_reset_can_be_undone_and_keeps_the_old_code_as_a_draft(browser: Browser, live_stack, size: str):
    mine = "print('my own work')\n"
    page = new_page(browser, live_stack, size)
    try:
        open_playground(page)
        starter = get_code(page)
        set_code(page, mine)
        page.locator("#reset-code").click()
        bar = page.locator("#undo-bar")
        expect(bar).to_contain_text("Code reset.")
        undo = bar.get_by_role("button", name="Undo")
        expect(undo).to_be_focused()  # Reset went with the edits: the keyboard is on Undo
        assert get_code(page) == starter
        assert_accessible(page, f"the undo bar at {size}")
        shoot(page, f"reset-undo-{size}")
        undo.click()
        expect(bar).to_be_hidden()
        assert get_code(page) == mine

        # Reset again and reload: the code before it is a draft of its own, and opens again.
        page.locator("#reset-code").click()
        expect(bar).to_be_visible()
        open_playground(page, reload=True)
        assert get_code(page) == starter
        page.click("#examples-button")
        kept = page.locator("#examples-menu .draft-item", has_text="before Reset")
        expect(kept).to_have_count(1)
        kept.click()
        assert get_code(page) == mine
        page.click("#examples-button")
        expect(page.locator("#examples-menu .draft-item", has_text="before Reset")).to_have_count(0)
        page.keyboard.press("Escape")
        assert page.errors == []
    finally:
        page.context.close()


def test_an_assignments_reset_can_be_undone_after_a_reload_too(
        browser: Browser, live_stack, people, course):
    _, assignment = course
    mine = "def square(x):\n    return x * x  # mine\n"
    # Reset deletes the draft on the server too, which it may not have reached yet (a 404).
    with browser_as(browser, live_stack, people["sam"], size="phone", allowed=("404",)) as sam:
        open_assignment(sam, assignment.pk)
        starter = get_code(sam)
        set_code(sam, mine)
        sam.locator("#reset-code").click()
        bar = sam.locator("#undo-bar")
        expect(bar).to_contain_text("Code reset.")
        expect(bar.get_by_role("button", name="Undo")).to_be_focused()
        assert get_code(sam) == starter
        assert_accessible(sam, "an assignment's undo bar on a phone")
        bar.get_by_role("button", name="Undo").click()
        expect(bar).to_be_hidden()
        assert get_code(sam) == mine
        # Reset, reload: the code before it is still one click away.
        sam.locator("#reset-code").click()
        open_assignment(sam, assignment.pk)
        assert get_code(sam) == starter
        bar.get_by_role("button", name="Undo").click()
        assert get_code(sam) == mine


# 3. A failed run is shown on the Output tab -------------------------------------------------------

def test_a_failed_run_switches_to_the_output_tab_and_a_cancelled_one_does_not(page: Page):
    code = "import jax\nf = jax.jit(lambda x: x * 2)\nprint(f(1.0))\n1 / 0\n"
    assert run_code(page, code) == "failed"
    page.locator("#tab-compiled").click()
    # Run again from the Compiled tab: it ends in an error, and the Output tab is shown with it.
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "failed"
    expect(page.locator("#tab-output")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#error-box")).to_contain_text("ZeroDivisionError")
    assert_accessible(page, "a failed run, shown on Output")
    # A run that succeeds leaves the person where they are.
    page.locator("#tab-compiled").click()
    assert run_code(page, "import jax\nprint(jax.jit(lambda x: x + 1)(1.0))\n") == "succeeded"
    expect(page.locator("#tab-compiled")).to_have_attribute("aria-selected", "true")


# 4. A run stopped at its wall clock says what to do -----------------------------------------------

def test_a_run_out_of_time_says_what_to_try(browser: Browser, live_stack, people, course):
    _, assignment = course
    assignment.limits = {"wall_s": 3}
    assignment.save(update_fields=["limits"])
    with browser_as(browser, live_stack, people["sam"]) as sam:
        open_assignment(sam, assignment.pk)
        set_code(sam, "import time\nwhile True:\n    time.sleep(0.1)\n")
        sam.locator("#run-button").click()
        assert wait_until_finished(sam) == "timed_out"
        expect(sam.locator("#run-message")).to_contain_text("the Output tab says what to try")
        expect(sam.get_by_role("tab", name="Output")).to_have_attribute("aria-selected", "true")
        box_ = sam.locator("#error-box")
        expect(box_).to_contain_text("Out of time")
        expect(box_).to_contain_text("limit of 3 s")
        expect(box_).to_contain_text("smaller problem")
        expect(box_.locator("code", has_text="jax.block_until_ready(result)")).to_be_visible()
        expect(box_).to_contain_text("longer limit")
        assert_accessible(sam, "a run out of time")
        shoot(sam, "timed-out")


# 5. The embed at a blog's width ------------------------------------------------------------------

@pytest.mark.parametrize("width,stacked", [(1440, False), (1024, False), (760, True), (390, True)])
def test_the_embed_stacks_at_a_blogs_width_and_shows_the_description(browser: Browser, live_stack,
                                                                     width: int, stacked: bool):
    page = new_page(browser, live_stack)
    try:
        page.set_viewport_size({"width": width, "height": 420})  # the height the share dialog gives
        slug = page.request.post("/api/snippets", data={
            "code": "import jax.numpy as jnp\nprint(jnp.arange(40.0) ** 2)\n", "title": "Squares",
            "description": "Squares of the first forty numbers, *jitted*.",
        }).json()["slug"]
        open_playground(page, path=f"/embed/{slug}")
        expect(page.locator("#embed-description")).to_contain_text("Squares of the first forty numbers")
        editor, results = box(page, ".panel-editor"), box(page, ".panel-results")
        if stacked:
            assert results["y"] >= editor["y"] + editor["height"] - 1
            assert editor["width"] >= width - 24 and results["width"] >= width - 24
            assert editor["height"] >= 100 and results["height"] >= 100
        else:
            assert results["x"] >= editor["x"] + editor["width"] - 1
        page.get_by_role("button", name="Run", exact=True).click()
        assert wait_until_finished(page) == "succeeded"
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert_accessible(page, f"the embed at {width} px")
        shoot(page, f"embed-{width}")
        assert page.errors == []
    finally:
        page.context.close()


# 6. The instructor's authoring screen ------------------------------------------------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_the_authoring_screen_says_which_editor_is_which_and_links_the_checks_guide(
        browser: Browser, live_stack, people, course, size: str):
    from courses.actions.assignments import do_create_assignment

    course_, _ = course
    blank = off_the_loop(do_create_assignment, course_, title="Blank", description="", starter_code="",
                         checks="", device="cpu")
    with browser_as(browser, live_stack, people["ines"], size=size) as ines:
        open_assignment(ines, blank.pk)
        ines.wait_for_function("() => window.playground.editors().length === 4")
        expect(ines.locator("#brief-no-description")).to_be_visible()
        ines.get_by_role("tab", name="Edit").click()
        note = ines.locator("#edit-editors-note")
        expect(note).to_contain_text("your attempt")
        expect(note).to_contain_text("starter code")
        expect(ines.locator("#file-name")).to_have_text("your attempt, as a student")
        guide = ines.locator("#edit-checks-help a")
        expect(guide).to_have_attribute("href", "/courses/checks")

        # The attempt becomes the starter code in a click; saved, the brief shows the description only.
        attempt = "def square(x):\n    return x * x\n"
        ines.evaluate("code => window.playground.editors()[0].setValue(code)", attempt)
        ines.get_by_role("button", name="Use my attempt's code").click()
        assert ines.evaluate("window.playground.editors()[1].getValue()") == attempt
        ines.fill("#edit-description", "Write **square(x)**.")
        assert_accessible(ines, f"the Edit tab at {size}")
        shoot(ines, f"authoring-{size}")
        ines.get_by_role("button", name="Save").click()
        expect(ines.locator("#edit-saved")).to_have_text("Saved.")
        ines.get_by_role("tab", name="Assignment").click()
        expect(ines.locator("#brief-description strong")).to_have_text("square(x)")
        expect(ines.locator("#brief-no-description")).to_be_hidden()
        assert_accessible(ines, f"the brief after a save at {size}")

        # A fresh assignment's empty attempt follows the starter code once it is saved.
        other = off_the_loop(do_create_assignment, course_, title="Other", description="", starter_code="",
                             checks="", device="cpu")
        open_assignment(ines, other.pk)
        ines.wait_for_function("() => window.playground.editors().length === 4")
        ines.get_by_role("tab", name="Edit").click()
        ines.evaluate("code => window.playground.editors()[1].setValue(code)", "x = 1\n")
        ines.get_by_role("button", name="Save").click()
        expect(ines.locator("#edit-saved")).to_have_text("Saved.")
        assert get_code(ines) == "x = 1\n"

        ines.goto("/courses/checks")
        expect(ines.get_by_role("heading", name="Writing an assignment's hidden checks", level=1)).to_be_visible()
        assert ines.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert_accessible(ines, f"the checks guide at {size}")


# 7. Courses are found: from the home page, and from a join link signed out ------------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_the_home_page_links_courses_and_a_join_link_names_its_course_signed_out(
        browser: Browser, live_stack, people, course, size: str):
    course_, _ = course
    with browser_as(browser, live_stack, size=size) as nobody:
        open_playground(nobody)
        link = nobody.get_by_role("link", name="Courses")
        expect(link).to_be_visible()
        expect(link).to_have_attribute("href", "/courses/")

        nobody.goto(f"/courses/join/{course_.join_code}")
        expect(nobody.get_by_role("heading", name="JAX 101", level=1)).to_be_visible()
        sign_in = nobody.get_by_role("link", name="Sign in to join")
        expect(sign_in).to_be_visible()
        # The course's own sign-in, which names it and offers an account first (test_teaching.py).
        assert sign_in.get_attribute("href") == f"/courses/join/{course_.join_code}/signin"
        assert nobody.get_by_role("link", name="Create an account").is_visible()
        assert_accessible(nobody, f"a join link signed out at {size}")
        shoot(nobody, f"join-signed-out-{size}")
        sign_in.click()
        expect(nobody).to_have_url(re.compile(rf"/courses/join/{course_.join_code}/signin$"))
    # Signed in, the same link joins.
    with browser_as(browser, live_stack, people["otto"]) as otto:
        otto.goto(f"/courses/join/{course_.join_code}")
        otto.get_by_role("button", name="Join the course").click()
        expect(otto).to_have_url(re.compile(rf"/courses/{course_.pk}/$"))


# 8. A phone's top bar, and the result tabs' focus ring --------------------------------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_the_top_bar_is_short_and_the_tabs_focus_ring_is_whole(browser: Browser, live_stack, size: str):
    page = new_page(browser, live_stack, size)
    try:
        open_playground(page)
        bar = box(page, "header.topbar")
        # A phone's bar was 190 of 844 px: two rows now, as at 1024 px; one row at 1440 px.
        assert bar["height"] <= {"wide": 64, "laptop": 110, "phone": 100}[size], bar
        in_bar = ("Examples", "Libraries", "Courses", "Share", "#run-button", "#device-select")
        for name in in_bar + (("Sign in",) if size != "phone" else ()):
            control = page.locator(name) if name.startswith("#") else (
                page.get_by_role("link", name=name, exact=True)
                .or_(page.get_by_role("button", name=name, exact=True)).first)
            expect(control).to_be_visible()
            found = control.bounding_box()
            assert found["x"] >= 0 and found["x"] + found["width"] <= SIZES[size][0], name
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        if size == "phone":
            # Signed out, Sign in is in the More menu, where the device's name needed the room.
            page.locator("#more-button").click()
            expect(page.locator("#more-menu").get_by_role("link", name="Sign in", exact=True)).to_be_visible()
            device = page.locator("#device-select")
            fits = device.evaluate("""s => {
                const style = getComputedStyle(s), text = document.createElement("canvas").getContext("2d");
                text.font = style.font;
                const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
                return text.measureText(s.options[s.selectedIndex].text).width <= room;
            }""")
            assert fits, "the device's name is cut"
            page.keyboard.press("Escape")

        # The ring of a focused tab is drawn inside the tab bar, which clips what is outside it.
        page.locator("#tab-output").focus()
        page.keyboard.press("ArrowRight")
        expect(page.locator("#tab-compiled")).to_be_focused()
        ring = page.evaluate("""() => {
            const tab = document.querySelector('#tab-compiled'), bar = tab.closest('.tabs');
            const s = getComputedStyle(tab), t = tab.getBoundingClientRect(), b = bar.getBoundingClientRect();
            const out = parseFloat(s.outlineWidth) + parseFloat(s.outlineOffset);
            return {style: s.outlineStyle, top: t.top - out - b.top, bottom: b.bottom - (t.bottom + out),
                    left: t.left - out - b.left, right: b.right - (t.right + out)}; }""")
        assert ring["style"] != "none", ring
        assert min(ring["top"], ring["bottom"], ring["left"], ring["right"]) >= -0.5, ring
        assert_accessible(page, f"the playground at {size}")
        shoot(page, f"top-bar-{size}")
        assert page.errors == []
    finally:
        page.context.close()
