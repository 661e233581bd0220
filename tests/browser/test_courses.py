"""Courses in a real Chromium against the whole stack: making a course and an assignment, joining
it, a student running and submitting while the instructor's dashboard (another browser) follows
live, the hidden checks never reaching a student's page, and every course page accessible (axe,
light and dark, 1440, 1024 and 390 px wide) and usable from the keyboard.

Screenshots of every page go to /tmp/screens/courses-*.png for a person to look at.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.test import Client
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError

from tests import people as people_fixtures

from .playground import RUN_TIMEOUT_MS, SCREENS, assert_accessible, get_code, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# In the checks' source only: a page, response or event a student gets that holds it leaked them.
MARKER = "HIDDEN_CHECK_MARKER_7741"
CHECKS = f"""\
from jaxplay.grading import allclose, check
import numpy as np
NOTE = "{MARKER}"
check("square of 3", allclose(square(3.0), 9.0), points=2)
with check("keeps the shape", points=1):
    assert np.asarray(square(np.ones(3))).shape == (3,), "square(x) must keep x's shape"
"""
STARTER = "import jax.numpy as jnp\n\ndef square(x):\n    ...\n"
CORRECT = "import jax.numpy as jnp\n\ndef square(x):\n    return x * x\n\nprint('square(3) =', square(3.0))\n"
WRONG = "import jax.numpy as jnp\n\ndef square(x):\n    return x + x\n"
FAILING = "import jax.numpy as jnp\n\ndef square(x):\n    return x * x\n\nprint(1 / 0)\n"
DESCRIPTION = "Write **square(x)**, which squares `x` elementwise.\n\n- keep the shape\n- use `jax.numpy`\n"
# Grading runs the code and then the checks in a sandbox: allow for a runner to start.
GRADE_TIMEOUT_MS = 90_000
SIZES = {"wide": (1440, 900), "laptop": (1024, 768), "phone": (390, 844)}


_fresh_rate_limits = people_fixtures.fresh_rate_limits


def off_the_loop(fn, *args, **kwargs):
    """Call an action from another thread: Playwright's event loop runs in this one, and an action
    that tells the dashboards (through the channel layer) cannot wait for it from here."""
    from django.db import connections

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


@contextmanager
def browser_as(browser: Browser, live_stack, user=None, *, theme: str = "light", size: str = "wide",
               allowed: tuple[str, ...] = ()):
    """A fresh profile signed in as ``user`` (None: signed out). Fails on any script error and on
    any console error but those containing one of ``allowed``."""
    width, height = SIZES[size]
    context = browser.new_context(base_url=live_stack.url, viewport={"width": width, "height": height},
                                  color_scheme=theme, reduced_motion="reduce")
    if user is not None:
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_stack.url}])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" and not any(a in m.text for a in allowed) else None)
    try:
        yield page
    finally:
        context.close()
    assert problems == [], problems


def open_assignment(page: Page, assignment_id: int) -> None:
    page.goto(f"/assignments/{assignment_id}/")
    page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
    expect(page.locator("#run-button")).to_be_enabled()


def open_dashboard(page: Page, course_id: int) -> None:
    page.goto(f"/courses/{course_id}/dashboard")
    expect(page.locator("#live-state")).to_have_attribute("data-state", "live")


def cell(page: Page, student, assignment):
    return page.locator(f"td.grid-cell[data-key='{student.pk}:{assignment.pk}']")


def shoot(page: Page, name: str, full_page: bool = True) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENS / f"courses-{name}.png", full_page=full_page)


def no_sideways_scroll(page: Page) -> None:
    wider = page.evaluate("""() => document.documentElement.scrollWidth <= innerWidth ? [] :
        [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1
            && !e.closest('.grid-scroll, .monaco-editor, .tabs'))
          .slice(0, 8).map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.')
            + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert wider == [], f"the page scrolls sideways: {wider}"


# A course from nothing ----------------------------------------------------------------------------

def test_an_instructor_makes_a_course_and_an_assignment_and_a_student_joins(browser: Browser, live_stack, people):
    # The refusals the test asks for show in the console as failed requests.
    with browser_as(browser, live_stack, people["ines"], allowed=("status of 400", "status of 422")) as ines:
        ines.goto("/courses/")
        expect(ines.get_by_role("heading", name="Courses", level=1)).to_be_visible()
        expect(ines.locator(".empty")).to_contain_text("You are in no course yet")
        # An empty title is refused in words.
        ines.get_by_role("button", name="Create").click()
        expect(ines.locator("#create-course-error")).to_contain_text("'title'")
        ines.fill("#course-title", "Numerical JAX")
        ines.get_by_role("button", name="Create").click()
        expect(ines).to_have_url(re.compile(r"/courses/\d+/$"))
        from courses.models import Course

        made = Course.objects.get(title="Numerical JAX")
        expect(ines.locator("#flash")).to_contain_text(f"Students join it with the code {made.join_code}")
        expect(ines.locator(".join-code")).to_have_text(made.join_code)
        expect(ines.locator("#join-link")).to_have_value(re.compile(rf"^http://[^/]+/courses/join/{made.join_code}$"))

        # A new assignment: its page opens on its settings.
        ines.get_by_role("button", name="New assignment").click()
        dialog = ines.get_by_role("dialog", name="New assignment")
        expect(dialog).to_be_visible()
        expect(ines.locator("#assignment-title")).to_be_focused()
        ines.keyboard.type("Squares")
        ines.keyboard.press("Enter")
        expect(ines).to_have_url(re.compile(r"/assignments/\d+/#edit$"))
        ines.wait_for_function("() => window.playground && window.playground.editors().length === 4")
        expect(ines.get_by_role("tab", name="Edit")).to_have_attribute("aria-selected", "true")
        ines.fill("#edit-description", DESCRIPTION)
        ines.fill("#edit-due", "2099-01-31T23:59")
        ines.evaluate("([starter, checks]) => { const [, s, c] = window.playground.editors();"
                      " s.setValue(starter); c.setValue(checks); }", [STARTER, CHECKS])
        ines.get_by_role("button", name="Save").click()
        expect(ines.locator("#edit-saved")).to_have_text("Saved.")
        ines.get_by_role("tab", name="Assignment").click()
        expect(ines.locator("#brief-description strong")).to_have_text("square(x)")
        expect(ines.locator("#brief-max")).to_have_text("3")
        # Checks that are not Python are refused, naming the line.
        ines.get_by_role("tab", name="Edit").click()
        ines.evaluate("() => window.playground.editors()[2].setValue('check(\"x\",\\n')")
        ines.get_by_role("button", name="Save").click()
        expect(ines.locator("#edit-error")).to_contain_text("not valid Python")
        expect(ines.locator("#edit-error")).to_contain_text("line")

    assignment = made.assignments.get()
    assert assignment.starter_code == STARTER and assignment.checks == CHECKS and assignment.max_score == 3
    assert assignment.due_at is not None and assignment.due_at.year == 2099

    with browser_as(browser, live_stack, people["sam"]) as sam:
        # The join link: the course's name and one button.
        sam.goto(f"/courses/join/{made.join_code.lower()}")
        expect(sam.get_by_role("heading", name="Numerical JAX")).to_be_visible()
        sam.get_by_role("button", name="Join the course").click()
        expect(sam).to_have_url(re.compile(rf"/courses/{made.pk}/$"))
        expect(sam.locator("#flash")).to_contain_text("You joined “Numerical JAX”")
        row = sam.locator(".assignment-item", has_text="Squares")
        expect(row.locator(".assignment-status")).to_have_text("Not submitted")
        # A student sees no instructor's tools.
        for tool in ("Live dashboard", "New assignment", "Archive", "Grades (CSV)"):
            expect(sam.get_by_text(tool, exact=True)).to_have_count(0)
        # The join link again: already in, straight to the course.
        sam.goto(f"/courses/join/{made.join_code}")
        expect(sam).to_have_url(re.compile(rf"/courses/{made.pk}/$"))

    with browser_as(browser, live_stack, people["otto"], allowed=("404",)) as otto:
        # Joining by typing the code (spaces and case as typed from a slide).
        otto.goto("/courses/")
        otto.fill("#join-code", "nope")
        otto.get_by_role("button", name="Join").click()
        expect(otto.locator("#join-error")).to_have_text("No course has this join code.")
        otto.fill("#join-code", f" {made.join_code[:4].lower()} {made.join_code[4:]} ")
        otto.get_by_role("button", name="Join").click()
        expect(otto).to_have_url(re.compile(rf"/courses/{made.pk}/$"))


def test_an_instructor_manages_members_and_archives(browser: Browser, live_stack, people, course):
    course, assignment = course
    with browser_as(browser, live_stack, people["ines"], allowed=("status of 400",)) as ines:
        ines.goto(f"/courses/{course.pk}/")
        members = ines.locator(".member-list").first  # the members; the invited are listed below them
        expect(members.locator(".member")).to_have_count(2)
        # An invitation, answered the same whether or not the name is anyone's.
        for name in ("nobody-by-that-name", "otto"):
            ines.fill("#instructor-username", name)
            ines.get_by_role("button", name="Invite", exact=True).click()
            expect(ines.locator("#flash")).to_have_text(
                f"{name} is invited to teach this course: they join it when they accept.")
        expect(ines.locator(".member", has_text="otto")).to_contain_text("instructor, invited")
        expect(members.locator(".member")).to_have_count(2)  # not a member until they accept

        # Removing a student asks first; Cancel keeps them.
        ines.get_by_role("button", name="Remove sam from the course").click()
        confirm = ines.get_by_role("dialog", name="Remove sam?")
        expect(confirm).to_be_visible()
        confirm.get_by_role("button", name="Cancel").click()
        expect(members.locator(".member", has_text="sam")).to_have_count(1)
        ines.get_by_role("button", name="Remove sam from the course").click()
        ines.get_by_role("dialog", name="Remove sam?").get_by_role("button", name="Remove").click()
        expect(ines.locator("#flash")).to_have_text("sam was removed from the course.")
        expect(members.locator(".member", has_text="sam")).to_have_count(0)

        ines.get_by_role("button", name="Archive").click()
        ines.get_by_role("dialog", name="Archive this course?").get_by_role("button", name="Archive").click()
        expect(ines.locator("#flash")).to_have_text("The course is archived: it is read-only now.")
        expect(ines.locator(".title-row .chip", has_text="Archived")).to_be_visible()
        expect(ines.get_by_role("button", name="New assignment")).to_have_count(0)

        # The assignment is read-only now.
        ines.goto(f"/assignments/{assignment.pk}/")
        ines.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        expect(ines.locator("#archived-banner")).to_be_visible()
        expect(ines.locator("#run-button")).to_be_disabled()
        expect(ines.locator("#submit-button")).to_be_disabled()


def test_strangers_and_students_find_nothing_and_signed_out_people_sign_in_first(browser: Browser, live_stack,
                                                                                 people, course):
    course, assignment = course
    with browser_as(browser, live_stack, people["otto"], allowed=("404",)) as otto:
        for path in (f"/courses/{course.pk}/", f"/courses/{course.pk}/dashboard", f"/assignments/{assignment.pk}/",
                     "/courses/999999/", "/assignments/abc/", "/courses/join/ZZZZZZZZ"):
            response = otto.goto(path)
            assert response.status == 404, path
            assert "JAX 101" not in otto.content() and "Squares" not in otto.content()
        expect(otto.get_by_text("JAX 101")).to_have_count(0)
    with browser_as(browser, live_stack, people["sam"], allowed=("404",)) as sam:
        assert sam.goto(f"/courses/{course.pk}/dashboard").status == 404
    with browser_as(browser, live_stack) as nobody:
        for path in (f"/courses/{course.pk}/", f"/assignments/{assignment.pk}/"):
            nobody.goto(path)
            assert urlparse(nobody.url).path == "/accounts/login/", path
            assert f"next={path}" in nobody.url.replace("%2F", "/")
        # A join link names its course, with the way to sign in and come back (test_first_use.py).
        nobody.goto(f"/courses/join/{course.join_code}")
        expect(nobody.get_by_role("link", name="Sign in to join")).to_be_visible()


# The test: a student runs and submits, the instructor's dashboard follows live ----------

def test_the_dashboard_shows_a_students_run_and_submission_live(browser: Browser, live_stack, people, course):
    course, assignment = course
    sam_user = people["sam"]
    with browser_as(browser, live_stack, people["ines"]) as ines, \
            browser_as(browser, live_stack, sam_user) as sam:
        open_dashboard(ines, course.pk)
        ines.evaluate("window.__sameDocument = true")
        expect(ines.locator("#class-grid tbody tr")).to_have_count(1)
        expect(ines.locator("#class-grid tbody th")).to_have_text("sam")
        sams = cell(ines, sam_user, assignment)
        expect(sams).to_contain_text("nothing yet")
        # The feed so far, rebuilt from what is stored: sam joined (nothing run yet).
        expect(ines.locator("#feed .feed-item")).to_have_count(1)
        expect(ines.locator("#feed .feed-item[data-kind='member']")).to_contain_text("sam joined the course")

        # The student opens the assignment: the starter code, the brief.
        open_assignment(sam, assignment.pk)
        assert get_code(sam) == STARTER
        expect(sam.get_by_role("tab", name="Assignment")).to_have_attribute("aria-selected", "true")
        expect(sam.locator("#brief-description strong")).to_have_text("square(x)")

        # A run: the dashboard's cell and feed follow it, without a reload.
        set_code(sam, FAILING)
        sam.get_by_role("button", name="Run").click()
        assert wait_until_finished(sam) == "failed"
        expect(sam.locator("#error-box")).to_contain_text("ZeroDivisionError")
        expect(sams).to_have_attribute("data-run-status", "failed", timeout=20_000)
        expect(sams.locator(".cell-main")).to_have_text("error")
        feed = ines.locator("#feed .feed-item").first
        expect(feed).to_contain_text("sam")
        expect(feed).to_contain_text("failed")
        expect(feed).to_contain_text("ZeroDivisionError")
        expect(ines.locator("#errors .error-item").first).to_contain_text("ZeroDivisionError", timeout=20_000)

        # A submission: graded in the sandbox, the grid shows the score as soon as it lands.
        set_code(sam, CORRECT)
        sam.get_by_role("button", name="Submit").click()
        expect(sam.get_by_role("tab", name="Submissions")).to_have_attribute("aria-selected", "true")
        expect(sams).to_have_attribute("data-status", re.compile("queued|grading|graded"), timeout=20_000)
        expect(ines.locator("#feed .feed-item", has_text="submitted").first).to_be_visible()
        expect(sams.locator(".cell-main")).to_have_text("3/3", timeout=GRADE_TIMEOUT_MS)
        expect(sams).to_have_attribute("data-tone", "ok")
        assert ines.evaluate("window.__sameDocument === true"), "the dashboard reloaded"

        # The student sees each check, its points, and the score.
        submission = sam.locator(".submission").first
        expect(submission.locator(".score")).to_have_text("3 / 3", timeout=GRADE_TIMEOUT_MS)
        expect(submission.locator(".check")).to_have_count(2)
        expect(submission.locator(".check").first).to_contain_text("square of 3")
        expect(submission.locator(".check").first).to_contain_text("2 / 2")
        expect(sam.locator("#output")).to_have_text("square(3) = 9.0\n")

        # The histogram counts the graded submission in the top bin.
        histogram = ines.locator(f".histogram[data-assignment='{assignment.pk}']")
        expect(histogram.locator(".hist-total")).to_have_text("1 graded of 1", timeout=20_000)

        # A cell opens the student's code, output and checks.
        sams.get_by_role("button").click()
        detail = ines.get_by_role("dialog", name="sam · Squares")
        expect(detail).to_be_visible()
        expect(detail.locator("#cell-checks .check")).to_have_count(2)
        expect(detail.locator("#cell-code .code-block").first).to_contain_text("return x * x")
        expect(detail.locator("#output")).to_have_text("square(3) = 9.0\n")
        shoot(ines, "dashboard-cell-light", full_page=False)
        ines.keyboard.press("Escape")
        expect(detail).to_be_hidden()
        expect(sams.get_by_role("button")).to_be_focused()

        # A wrong submission: the cell and the student's list follow again.
        set_code(sam, WRONG)
        sam.get_by_role("button", name="Submit").click()
        expect(sams.locator(".cell-main")).to_have_text("1/3", timeout=GRADE_TIMEOUT_MS)
        expect(sams).to_have_attribute("data-tone", "part")
        latest = sam.locator(".submission").first
        expect(latest.locator(".score")).to_have_text("1 / 3", timeout=GRADE_TIMEOUT_MS)
        expect(latest.locator(".check[data-passed=false]")).to_contain_text("square of 3")
        expect(sam.locator(".submission")).to_have_count(2)
        assert ines.evaluate("window.__sameDocument === true"), "the dashboard reloaded"

        # The course page says the score too.
        sam.goto(f"/courses/{course.pk}/")
        expect(sam.locator(".assignment-item .score")).to_have_text("1 / 3")


def test_an_instructor_regrades_with_live_progress(browser: Browser, live_stack, people, course):
    from courses.actions.submissions import do_submit

    course, assignment = course
    off_the_loop(do_submit, assignment, people["sam"], WRONG)
    with browser_as(browser, live_stack, people["ines"]) as ines:
        open_assignment(ines, assignment.pk)
        ines.get_by_role("tab", name="Submissions").click()
        first = ines.locator(".submission").first
        expect(first.locator(".submission-who")).to_have_text("sam")
        expect(first.locator(".score")).to_have_text("1 / 3", timeout=GRADE_TIMEOUT_MS)

        # Lenient checks: "square of 3" now accepts x + x at 3 (6 is not 9, so it checks 2 + 2).
        ines.get_by_role("tab", name="Edit").click()
        ines.wait_for_function("() => window.playground.editors().length === 4")
        lenient = CHECKS.replace("allclose(square(3.0), 9.0)", "allclose(square(2.0), 4.0)")
        ines.evaluate("c => window.playground.editors()[2].setValue(c)", lenient)
        ines.get_by_role("button", name="Save").click()
        offer = ines.locator("#regrade-offer")
        expect(offer).to_be_visible()
        offer.get_by_role("button", name="Regrade all now").click()
        expect(ines.get_by_role("tab", name="Submissions")).to_have_attribute("aria-selected", "true")
        expect(ines.locator("#regrade-note")).to_have_text(re.compile(r"Regrading: 0 of 1 done|Regraded 1"))
        expect(ines.locator("#regrade-note")).to_have_text("Regraded 1 submission with the current checks.",
                                                          timeout=GRADE_TIMEOUT_MS)
        expect(first.locator(".score")).to_have_text("3 / 3")
        expect(ines.locator("#regrade-progress")).to_have_attribute("aria-valuetext", "1 of 1 regraded")


# Validation and checks that crash -----------------------------------------------------------------

REFERENCE_MARKER = "REFERENCE_SOLUTION_MARKER_3391"
WRONG_REFERENCE = f"# {REFERENCE_MARKER}\n" + WRONG
# A helper line of the instructor's that raises: the check that needs it cannot run.
CRASHING_CHECKS = CHECKS.replace('check("square of 3", allclose(square(3.0), 9.0), points=2)',
                                 'expected = undefined_helper(3)\n'
                                 'check("square of 3", allclose(square(3.0), expected), points=2)')
DANGER = {"light": "rgb(198, 40, 40)", "dark": "rgb(248, 113, 113)"}


def test_the_instructor_sees_the_validation_with_a_failing_reference_in_red(browser: Browser, live_stack, people,
                                                                            course):
    from courses.actions.assignments import check_update_assignment
    from courses.models import Assignment

    course, assignment = course

    def save_reference(code: str) -> None:
        """As the page saves it: the reference and the starter code are graded with the checks."""
        off_the_loop(lambda: check_update_assignment(Assignment.objects.get(pk=assignment.pk),
                                                     {"reference_solution": code}, user=people["ines"]))

    save_reference(WRONG_REFERENCE)  # x + x, which misses "square of 3"
    for size in ("wide", "phone"):
        with browser_as(browser, live_stack, people["ines"], size=size) as ines:
            open_assignment(ines, assignment.pk)
            ines.get_by_role("tab", name="Edit").click()
            ines.wait_for_function("() => window.playground.editors().length === 4")
            assert ines.evaluate("window.playground.editors()[3].getValue()") == WRONG_REFERENCE
            reference = ines.locator(".validation-run[data-kind='reference']")
            expect(reference).to_have_attribute("data-ok", "false", timeout=GRADE_TIMEOUT_MS)
            expect(reference.locator(".score")).to_have_text("1 / 3")
            verdict = reference.locator(".validation-verdict")
            expect(verdict).to_have_text("Does not get every point: “square of 3” failed.")
            assert verdict.evaluate("e => getComputedStyle(e).color") == DANGER["light"]
            assert reference.evaluate("e => getComputedStyle(e).borderLeftColor") == DANGER["light"]
            expect(reference.locator(".check[data-passed=false]")).to_contain_text("square of 3")
            starter = ines.locator(".validation-run[data-kind='starter']")
            expect(starter).to_have_attribute("data-ok", "true", timeout=GRADE_TIMEOUT_MS)
            expect(starter.locator(".score")).to_have_text("0 / 3")
            expect(starter.locator(".validation-verdict")).to_have_text(
                "Does not get every point, as starter code should not.")
            ines.locator(".validation").scroll_into_view_if_needed()
            assert_accessible(ines, f"the validation at {size}")
            no_sideways_scroll(ines)
            ines.locator(".validation").screenshot(path=str(SCREENS / f"courses-validation-{size}.png"))
            shoot(ines, f"validation-page-{size}", full_page=False)

            # Fixed in the page: the reference gets every point, live, without a reload.
            if size == "wide":
                ines.evaluate("code => window.playground.editors()[3].setValue(code)", CORRECT)
                ines.get_by_role("button", name="Save").click()
                expect(ines.locator("#edit-saved")).to_have_text("Saved.")
                expect(reference.locator(".score")).to_have_text("3 / 3", timeout=GRADE_TIMEOUT_MS)
                expect(reference).to_have_attribute("data-ok", "true")
                expect(reference.locator(".validation-verdict")).to_have_text("Gets every point, as it should.")
                save_reference(WRONG_REFERENCE)

    # The student's page has neither the reference nor its validation.
    with browser_as(browser, live_stack, people["sam"]) as sam:
        bodies: list[str] = []

        def keep(response):
            try:
                if "json" in (response.headers.get("content-type") or ""):
                    bodies.append(response.text())
            except PlaywrightError:  # a body Chromium no longer holds: nothing of it was shown
                pass

        sam.on("response", keep)
        open_assignment(sam, assignment.pk)
        assert REFERENCE_MARKER not in sam.content() and not any(REFERENCE_MARKER in b for b in bodies)
        expect(sam.locator(".validation")).to_have_count(0)


def test_checks_that_crash_show_the_instructor_the_traceback_and_the_student_a_provisional_grade(
        browser: Browser, live_stack, people, course):
    from courses.actions.assignments import do_update_assignment
    from courses.actions.submissions import do_submit

    course, assignment = course
    off_the_loop(do_update_assignment, assignment, {"checks": CRASHING_CHECKS})
    with browser_as(browser, live_stack, people["ines"]) as ines:
        open_dashboard(ines, course.pk)
        off_the_loop(do_submit, assignment, people["sam"], CORRECT)
        # The dashboard is told at once, over its socket: which check, and the traceback.
        crashes = ines.locator("#check-errors")
        expect(crashes).to_be_visible(timeout=GRADE_TIMEOUT_MS)
        expect(crashes.locator(".crash-item")).to_contain_text("“square of 3” could not run")
        crashes.locator("summary").click()
        expect(crashes.locator("pre")).to_contain_text("undefined_helper")
        expect(cell(ines, people["sam"], assignment)).to_have_attribute("data-tone", "crashed")
        for size in ("wide", "phone"):
            ines.set_viewport_size({"width": SIZES[size][0], "height": SIZES[size][1]})
            assert_accessible(ines, f"dashboard with checks that crashed, {size}")
            no_sideways_scroll(ines)
            crashes.screenshot(path=str(SCREENS / f"courses-check-errors-dashboard-{size}.png"))

        ines.set_viewport_size({"width": 1440, "height": 900})
        open_assignment(ines, assignment.pk)
        ines.get_by_role("tab", name="Submissions").click()
        notice = ines.locator("#check-errors")
        expect(notice).to_contain_text("The checks crashed on 1 student’s latest submission")
        expect(ines.locator(".submission").first.locator(".chip-danger")).to_have_text("needs regrade")
        shoot(ines, "check-errors-assignment-wide", full_page=False)

    with browser_as(browser, live_stack, people["sam"], size="phone") as sam:
        open_assignment(sam, assignment.pk)
        sam.get_by_role("tab", name="Submissions").click()
        submission = sam.locator(".submission").first
        expect(submission.locator(".score-provisional")).to_have_text("1 / 3")
        expect(submission.locator(".chip-warn")).to_have_text("provisional")
        expect(submission.locator(".check[data-crashed=true]")).to_contain_text(
            "this check could not run; your instructor has been told")
        assert "undefined_helper" not in sam.content()
        assert_accessible(sam, "a provisional grade, phone")
        no_sideways_scroll(sam)
        shoot(sam, "provisional-student-phone")


# Hidden checks, results after the due date -------------------------------------------------------

def test_a_student_never_gets_the_hidden_checks(browser: Browser, live_stack, people, course):
    course, assignment = course
    with browser_as(browser, live_stack, people["sam"]) as sam:
        bodies: list[str] = []

        def keep(response):
            try:
                if "text" in (response.headers.get("content-type") or "") or "json" in (
                        response.headers.get("content-type") or ""):
                    bodies.append(response.text())
            except PlaywrightError:  # a redirect's (it has none) or a body Chromium no longer holds
                pass

        sam.on("response", keep)
        frames: list[str] = []
        sam.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
        open_assignment(sam, assignment.pk)
        assert MARKER not in sam.content()
        expect(sam.get_by_role("tab", name="Edit")).to_have_count(0)
        expect(sam.locator("#edit-pane")).to_have_count(0)
        set_code(sam, CORRECT)
        sam.get_by_role("button", name="Submit").click()
        expect(sam.locator(".submission").first.locator(".score")).to_have_text("3 / 3", timeout=GRADE_TIMEOUT_MS)
        sam.goto(f"/courses/{course.pk}/")
        assert bodies, "no response was recorded"
        leaked = [b[:200] for b in bodies + frames if MARKER in b or "allclose(square(3.0)" in b]
        assert leaked == [], leaked


def test_results_wait_for_the_due_date_when_the_instructor_says_so(browser: Browser, live_stack, people, course):
    from django.utils import timezone

    course, assignment = course
    assignment.results_before_due = False
    assignment.due_at = timezone.now() + timedelta(days=3)
    assignment.save()
    with browser_as(browser, live_stack, people["sam"]) as sam:
        open_assignment(sam, assignment.pk)
        expect(sam.locator("#brief-results")).to_have_text("Scores and checks show after the due date.")
        set_code(sam, CORRECT)
        sam.get_by_role("button", name="Submit").click()
        submission = sam.locator(".submission").first
        expect(submission.locator(".submitted-badge")).to_be_visible(timeout=GRADE_TIMEOUT_MS)
        expect(submission.locator(".results-later")).to_contain_text("Results after the due date")
        expect(submission.locator(".score")).to_have_count(0)
        sam.goto(f"/courses/{course.pk}/")
        expect(sam.locator(".assignment-status")).to_contain_text("results after the due date")


# Drafts and the run view --------------------------------------------------------------------------

def test_the_students_code_is_kept_as_a_draft_and_starter_code_is_one_click_away(browser: Browser, live_stack,
                                                                                people, course):
    course, assignment = course
    with browser_as(browser, live_stack, people["sam"]) as sam:
        open_assignment(sam, assignment.pk)
        expect(sam.get_by_role("button", name="Reset to starter code")).to_be_disabled()
        set_code(sam, WRONG)
        expect(sam.get_by_role("button", name="Reset to starter code")).to_be_enabled()
        # Saved on the server too (signed in, 1.5 s after the last edit): another browser finds it.
        from accounts.models import Draft

        stored = Draft.objects.filter(user=people["sam"], key=f"assignment:{assignment.pk}")
        deadline = time.monotonic() + 20
        while stored.filter(code=WRONG).count() != 1:
            assert time.monotonic() < deadline, "the draft was not saved on the server"
            time.sleep(0.2)
        open_assignment(sam, assignment.pk)
        assert get_code(sam) == WRONG
    with browser_as(browser, live_stack, people["sam"]) as elsewhere:
        open_assignment(elsewhere, assignment.pk)
        elsewhere.wait_for_function("code => window.playground.getCode() === code", arg=WRONG)
        elsewhere.get_by_role("button", name="Reset to starter code").click()
        assert get_code(elsewhere) == STARTER
        # Ctrl+Enter runs, as in the playground; the output is the playground's own view.
        set_code(elsewhere, CORRECT)
        elsewhere.locator("#editor .view-lines").click()
        elsewhere.keyboard.press("Control+Enter")
        assert wait_until_finished(elsewhere, RUN_TIMEOUT_MS) == "succeeded"
        expect(elsewhere.locator("#output")).to_have_text("square(3) = 9.0\n")
        expect(elsewhere.get_by_role("tab", name="Results")).to_have_attribute("aria-selected", "true")
        expect(elsewhere.get_by_role("tab", name="Output")).to_have_attribute("aria-selected", "true")


# Accessible, in both themes, at three widths -----------------------------------------------------

@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_course_page_passes_axe_and_lays_out_at_each_width(browser: Browser, live_stack, people, course,
                                                               theme: str):
    from courses.actions.submissions import do_start_course_run, do_submit

    course, assignment = course
    off_the_loop(do_submit, assignment, people["sam"], CORRECT)
    off_the_loop(do_start_course_run, assignment, people["sam"], FAILING)

    with browser_as(browser, live_stack, people["sam"], theme=theme) as sam:
        open_assignment(sam, assignment.pk)
        expect(sam.locator(".submission").first.locator(".score")).to_have_text("3 / 3", timeout=GRADE_TIMEOUT_MS)
        for size in SIZES:
            width, height = SIZES[size]
            sam.set_viewport_size({"width": width, "height": height})
            for tab in ("Assignment", "Submissions"):
                sam.get_by_role("tab", name=tab).click()
                assert_accessible(sam, f"assignment, {tab}, student, {theme}, {size}")
                no_sideways_scroll(sam)
                shoot(sam, f"assignment-{tab.lower()}-{size}-{theme}", full_page=size == "phone")
        sam.set_viewport_size({"width": 1440, "height": 900})
        set_code(sam, CORRECT)
        sam.get_by_role("button", name="Run").click()
        assert wait_until_finished(sam) == "succeeded"
        assert_accessible(sam, f"assignment, output, {theme}")
        shoot(sam, f"assignment-output-wide-{theme}", full_page=False)

        for path, name in ((f"/courses/{course.pk}/", "course-student"), ("/courses/", "list-student")):
            sam.goto(path)
            for size in SIZES:
                width, height = SIZES[size]
                sam.set_viewport_size({"width": width, "height": height})
                assert_accessible(sam, f"{name}, {theme}, {size}")
                no_sideways_scroll(sam)
                shoot(sam, f"{name}-{size}-{theme}")

    with browser_as(browser, live_stack, people["otto"], theme=theme) as otto:
        otto.goto(f"/courses/join/{course.join_code}")
        assert_accessible(otto, f"join, {theme}")
        shoot(otto, f"join-{theme}")
        otto.set_viewport_size({"width": 390, "height": 844})
        no_sideways_scroll(otto)
        assert_accessible(otto, f"join, {theme}, phone")

    with browser_as(browser, live_stack, people["ines"], theme=theme) as ines:
        ines.goto(f"/courses/{course.pk}/")
        for size in SIZES:
            width, height = SIZES[size]
            ines.set_viewport_size({"width": width, "height": height})
            assert_accessible(ines, f"course, instructor, {theme}, {size}")
            no_sideways_scroll(ines)
            shoot(ines, f"course-instructor-{size}-{theme}")
        ines.set_viewport_size({"width": 1440, "height": 900})
        ines.get_by_role("button", name="New assignment").click()
        assert_accessible(ines, f"course, new assignment dialog, {theme}")
        shoot(ines, f"new-assignment-{theme}", full_page=False)
        ines.keyboard.press("Escape")
        ines.get_by_role("button", name="Archive").click()
        assert_accessible(ines, f"course, confirm dialog, {theme}")
        ines.keyboard.press("Escape")

        open_assignment(ines, assignment.pk)
        ines.get_by_role("tab", name="Edit").click()
        ines.wait_for_function("() => window.playground.editors().length === 4")
        for size in SIZES:
            width, height = SIZES[size]
            ines.set_viewport_size({"width": width, "height": height})
            for tab in ("Edit", "Submissions"):
                ines.get_by_role("tab", name=tab).click()
                assert_accessible(ines, f"assignment, {tab}, instructor, {theme}, {size}")
                no_sideways_scroll(ines)
                shoot(ines, f"assignment-{tab.lower()}-instructor-{size}-{theme}", full_page=size == "phone")

        open_dashboard(ines, course.pk)
        expect(ines.locator("#errors .error-item")).to_have_count(1, timeout=20_000)
        for size in SIZES:
            width, height = SIZES[size]
            ines.set_viewport_size({"width": width, "height": height})
            assert_accessible(ines, f"dashboard, {theme}, {size}")
            no_sideways_scroll(ines)
            shoot(ines, f"dashboard-{size}-{theme}")
        ines.set_viewport_size({"width": 1440, "height": 900})
        cell(ines, people["sam"], assignment).get_by_role("button").click()
        expect(ines.locator("#cell-checks .check")).to_have_count(2)
        assert_accessible(ines, f"dashboard, cell detail, {theme}")
        shoot(ines, f"dashboard-cell-{theme}", full_page=False)


CLASS = ["ada", "alan", "barbara", "claude", "donald", "edsger", "frances", "grace", "john", "katherine",
         "ken", "margaret", "niklaus", "radia"]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_whole_class_on_the_dashboard(browser: Browser, live_stack, people, course, django_user_model, theme: str):
    """Fourteen students, three assignments, every kind of cell: made in the database directly
    (the grid shows what the snapshot says), for a person to look at and for axe."""
    from django.utils import timezone

    from courses.actions.assignments import do_create_assignment
    from courses.actions.members import do_join_course
    from courses.models import CourseRun, Submission
    from playground.models import Run, RunEvent

    course, squares = course
    gradients = off_the_loop(do_create_assignment, course, title="Gradients with jax.grad", description="",
                             starter_code="", checks=CHECKS, device="cpu")
    once = off_the_loop(do_create_assignment, course, title="Compile once, run many", description="",
                        starter_code="", checks=CHECKS, device="cpu")
    now = timezone.now()
    errors = [("TypeError", 4, "unsupported operand type(s) for +: 'int' and 'str'"),
              ("ConcretizationTypeError", 7, "Abstract tracer value encountered"),
              ("NameError", 2, "name 'jnp' is not defined")]
    for i, name in enumerate(CLASS):
        student = django_user_model.objects.create_user(name, password=people_fixtures.PASSWORD)
        off_the_loop(do_join_course, course, student)
        for j, assignment in enumerate((squares, gradients, once)):
            kind = (i * 3 + j * 5) % 7
            if kind == 6:
                continue  # nothing yet
            if kind in (0, 1, 2, 3):
                score = {0: 3.0, 1: 3.0, 2: 2.0, 3: 0.0}[kind]
                Submission.objects.create(assignment=assignment, student=student, code=CORRECT, status="graded",
                                          score=score, max_score=3.0, late=(i + j) % 5 == 0, graded_at=now)
            elif kind == 4:
                Submission.objects.create(assignment=assignment, student=student, code=CORRECT, status="grading")
            if kind in (2, 5) or (kind == 3 and i % 2):
                exc_type, line, message = errors[(i + j) % 3]
                run = Run.objects.create(code=WRONG, device="cpu", status="failed", started_at=now, finished_at=now)
                RunEvent.objects.create(run=run, seq=1, type="error",
                                        data={"seq": 1, "type": "error", "exc_type": exc_type, "line": line,
                                              "message": message})
                CourseRun.objects.create(run=run, assignment=assignment, student=student)

    with browser_as(browser, live_stack, people["ines"], theme=theme) as ines:
        open_dashboard(ines, course.pk)
        expect(ines.locator("#class-grid tbody tr")).to_have_count(len(CLASS) + 1)
        for size in SIZES:
            width, height = SIZES[size]
            ines.set_viewport_size({"width": width, "height": height})
            shoot(ines, f"class-{size}-{theme}")
            assert_accessible(ines, f"a whole class's dashboard, {theme}, {size}")
            no_sideways_scroll(ines)


def test_the_course_pages_work_from_the_keyboard(browser: Browser, live_stack, people, course):
    course, assignment = course
    with browser_as(browser, live_stack, people["sam"]) as sam:
        sam.goto("/courses/")
        # Tab from the top reaches the course's link; Enter opens it.
        for _ in range(12):
            sam.keyboard.press("Tab")
            if sam.evaluate("document.activeElement.textContent.trim()") == "JAX 101":
                break
        else:
            pytest.fail("Tab never reached the course's link")
        sam.keyboard.press("Enter")
        expect(sam).to_have_url(re.compile(rf"/courses/{course.pk}/$"))
        sam.get_by_role("link", name="Squares").focus()
        sam.keyboard.press("Enter")
        sam.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        # The tabs follow the arrows; Escape leaves the editor.
        sam.get_by_role("tab", name="Assignment").focus()
        sam.keyboard.press("ArrowRight")
        expect(sam.get_by_role("tab", name="Submissions")).to_be_focused()
        expect(sam.get_by_role("tab", name="Submissions")).to_have_attribute("aria-selected", "true")
        sam.locator("#editor .view-lines").click()
        sam.keyboard.press("Escape")
        assert sam.evaluate("document.activeElement.closest('#editor') === null")


def test_the_dashboard_grid_is_one_tab_stop_and_arrow_keys_move_in_it(browser: Browser, live_stack, people,
                                                                      course, django_user_model):
    from courses.actions.assignments import do_create_assignment
    from courses.actions.members import do_join_course
    from courses.actions.submissions import do_submit

    course, first = course
    second = off_the_loop(do_create_assignment, course, title="Cubes", description="", starter_code="",
                          checks=CHECKS, device="cpu")
    ada = django_user_model.objects.create_user("ada", password=people_fixtures.PASSWORD)
    off_the_loop(do_join_course, course, ada)
    off_the_loop(do_submit, first, ada, CORRECT)
    off_the_loop(do_submit, second, ada, WRONG)
    off_the_loop(do_submit, second, people["sam"], CORRECT)
    with browser_as(browser, live_stack, people["ines"]) as ines:
        open_dashboard(ines, course.pk)
        buttons = ines.locator("#class-grid .cell-button")
        expect(buttons).to_have_count(3)
        # One Tab stop: ada's first cell (the first that opens something).
        assert ines.evaluate("[...document.querySelectorAll('#class-grid .cell-button')].map(b => b.tabIndex)") \
            == [0, -1, -1]
        ines.locator("#class-grid .cell-button").first.focus()
        focused = "document.activeElement.closest('td').dataset.key"
        assert ines.evaluate(focused) == f"{ada.pk}:{first.pk}"
        ines.keyboard.press("ArrowRight")
        assert ines.evaluate(focused) == f"{ada.pk}:{second.pk}"
        ines.keyboard.press("ArrowDown")
        assert ines.evaluate(focused) == f"{people['sam'].pk}:{second.pk}"
        ines.keyboard.press("ArrowLeft")  # sam has nothing on the first: it stays
        assert ines.evaluate(focused) == f"{people['sam'].pk}:{second.pk}"
        ines.keyboard.press("Control+Home")
        assert ines.evaluate(focused) == f"{ada.pk}:{first.pk}"
        ines.keyboard.press("Enter")
        expect(ines.get_by_role("dialog", name="ada · Squares")).to_be_visible()
        ines.keyboard.press("Escape")
        expect(ines.get_by_role("dialog")).to_have_count(0)
        assert ines.evaluate(focused) == f"{ada.pk}:{first.pk}"
        # Tab leaves the grid at once.
        ines.keyboard.press("Tab")
        assert ines.evaluate("document.activeElement.closest('#class-grid') === null")
