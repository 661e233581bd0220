"""Fixtures of the browser tests: one Chromium for the package, a fresh profile per test."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests import people as people_fixtures

from .playground import CHROMIUM, CHROMIUM_ARGS, open_playground


# Package scope, not session: Playwright's loop must stop once the browser tests are done, or
# the async tests that run after them find a running loop in their thread.
@pytest.fixture(scope="package", autouse=True)
def _django_beside_playwright():
    """Playwright's sync API keeps an asyncio loop running in this thread, so Django takes the
    test process's own database calls (the flush after each test) for calls from async code.
    They are not: allow them, as Playwright's docs advise for Django."""
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="package")
def browser() -> Browser:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, live_stack) -> Page:
    """A fresh profile (empty localStorage) on the playground, with the editor ready. Fails the
    test on any uncaught script error."""
    context = browser.new_context(
        base_url=live_stack.url, viewport={"width": 1280, "height": 800}, color_scheme="light"
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    open_playground(page)
    yield page
    context.close()
    assert errors == [], f"uncaught errors on the page: {errors}"


# The people and the course of the teaching pages' tests (test_courses.py and the modules after
# it), here so that each module names them as fixtures rather than importing them.
@pytest.fixture
def people(django_user_model):
    make = django_user_model.objects.create_user
    return {"ines": make("ines", password=people_fixtures.PASSWORD),
            "sam": make("sam", password=people_fixtures.PASSWORD),
            "otto": make("otto", password=people_fixtures.PASSWORD)}


@pytest.fixture
def course(people):
    """JAX 101, taught by ines, taken by sam (otto is no member), with one assignment."""
    from courses.actions.assignments import do_create_assignment
    from courses.actions.courses import do_create_course
    from courses.actions.members import do_join_course

    from .test_courses import CHECKS, DESCRIPTION, STARTER, off_the_loop

    course = off_the_loop(do_create_course, people["ines"], "JAX 101")
    off_the_loop(do_join_course, course, people["sam"])
    assignment = off_the_loop(do_create_assignment, course, title="Squares", description=DESCRIPTION,
                              starter_code=STARTER, checks=CHECKS, device="cpu")
    return course, assignment
