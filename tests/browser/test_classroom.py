"""A class behind one address, and a run left behind, in Chromium at 1440, 1024 and 390 px, every
page axe-clean: a room signs up through its course's join link when the address's own sign-ups are
used up, a refused form keeps what was typed (and says the passwords are not kept), and My runs
cancels a queued and a running run whose pages were closed, from the keyboard and the mouse, the
row following each to its end.

Screenshots go to /tmp/screens/classroom-*.png for a person to look at.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import people as people_fixtures
from tests.people import PASSWORD

from .playground import SCREENS, assert_accessible
from .test_courses import browser_as, off_the_loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = ("wide", "laptop", "phone")
SLEEPER = "import time\nprint('started')\ntime.sleep(50)\nprint('never printed')\n"


_fresh_rate_limits = people_fixtures.fresh_rate_limits


def shoot(page: Page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENS / f"classroom-{name}.png", full_page=True)


def fits(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= innerWidth")


def use_up_the_addresss_sign_ups() -> None:
    """This browser's address (every test's is 127.0.0.1) has made its sign-ups this hour, as the
    tester who met the limit had: only a course's join link lets anyone else there sign up."""
    from django.conf import settings

    from playground.redis import get_redis
    from web.ratelimit import _key

    now = time.time()
    for when in (now, now + 3600):  # and the next window, should the test cross into it
        get_redis().set(_key("signups", "ip:127.0.0.1", 3600, when), settings.SIGNUP_RATE_LIMIT_PER_HOUR, ex=7200)


def value(page: Page, selector: str) -> str:
    return page.locator(selector).input_value()


# A room signs up through its join link; forms keep what was typed ---------------------------------

@pytest.mark.parametrize("size", SIZES)
def test_a_room_signs_up_through_its_join_link_and_a_refused_form_keeps_what_was_typed(
        browser: Browser, live_stack, people, course, size: str):
    course_, _ = course
    use_up_the_addresss_sign_ups()
    learner = f"learner-{size}"
    # The browser's console reports each refused page's status (429) as an error: expected here.
    with browser_as(browser, live_stack, size=size, allowed=("status of 429",)) as nobody:
        # Without a join link the address's sign-ups are used up; nothing typed is lost.
        nobody.goto("/accounts/signup/")
        nobody.fill("#id_username", learner)
        nobody.fill("#id_email", f"{learner}@example.com")
        nobody.fill("#id_password1", PASSWORD)
        nobody.fill("#id_password2", PASSWORD)
        nobody.get_by_role("button", name="Create account").click()
        errors = nobody.locator("#signup-errors")
        expect(errors).to_contain_text("Too many sign-ups from your address")
        expect(errors).to_contain_text("Use your course's join link")
        expect(errors).to_contain_text("type the password again")
        assert value(nobody, "#id_username") == learner and value(nobody, "#id_email") == f"{learner}@example.com"
        assert value(nobody, "#id_password1") == "" and value(nobody, "#id_password2") == ""
        assert fits(nobody)
        assert_accessible(nobody, f"a sign-up refused by the address's limit at {size}")
        shoot(nobody, f"signup-refused-{size}")

        # A sign-in refused keeps the username too.
        nobody.goto(f"/courses/join/{course_.join_code}")
        nobody.get_by_role("link", name="Sign in to join").click()
        nobody.fill("#id_username", "sam")
        nobody.fill("#id_password", "not the password")
        nobody.get_by_role("button", name="Sign in").click()
        expect(nobody.locator("#login-errors")).to_contain_text("the password field is emptied")
        assert value(nobody, "#id_username") == "sam" and value(nobody, "#id_password") == ""
        assert_accessible(nobody, f"a refused sign-in at {size}")

        # Through the course's join link: the page names the course, and the sign-up goes through.
        nobody.goto(f"/courses/join/{course_.join_code}")
        nobody.get_by_role("link", name="Create an account").click()
        expect(nobody.locator("#signup-course")).to_contain_text("JAX 101")
        nobody.fill("#id_username", learner)
        nobody.fill("#id_email", f"{learner}@example.com")
        nobody.fill("#id_password1", PASSWORD)
        nobody.fill("#id_password2", PASSWORD + " but different")
        nobody.get_by_role("button", name="Create account").click()
        expect(nobody.locator("#signup-errors")).to_contain_text("Check the fields below.")
        assert value(nobody, "#id_username") == learner and value(nobody, "#id_email") == f"{learner}@example.com"
        expect(nobody.locator("#signup-course")).to_contain_text("JAX 101")  # still the course's sign-up
        assert fits(nobody)
        assert_accessible(nobody, f"a join link's sign-up refused by a field at {size}")
        shoot(nobody, f"signup-for-a-course-{size}")
        nobody.fill("#id_password1", PASSWORD)
        nobody.fill("#id_password2", PASSWORD)
        nobody.get_by_role("button", name="Create account").click()
        expect(nobody).to_have_url(re.compile(rf"/courses/join/{course_.join_code}$"))
        nobody.get_by_role("button", name="Join the course").click()
        expect(nobody).to_have_url(re.compile(rf"/courses/{course_.pk}/$"))
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.get(username=learner).course_memberships.filter(course=course_).exists()


# My runs cancels a run whose page was closed ------------------------------------------------------

def queued_run(owner, code: str):
    """A run queued where no executor takes it (as behind a long queue)."""
    from playground.models import Run, RunEvent

    run = Run.objects.create(code=code, device="cpu", owner=owner)
    RunEvent.objects.create(run=run, seq=1, type="queued", data={"seq": 1, "type": "queued", "position": 1})
    return run


def running_run(owner):
    """A run that an executor is running (for 50 s, unless cancelled)."""
    from playground.actions.runs import do_start_run
    from playground.models import Run

    run = off_the_loop(do_start_run, SLEEPER, "cpu", owner=owner)
    deadline = time.monotonic() + 60
    while Run.objects.get(pk=run.pk).status != "running":
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.1)
    return run


def row(page: Page, label: str):
    return page.locator("tbody tr").filter(has_text=label)


@pytest.mark.parametrize("size", SIZES)
def test_my_runs_cancels_a_queued_and_a_running_run_and_the_rows_follow(
        browser: Browser, live_stack, people, size: str):
    from playground.models import Run

    sam = people["sam"]
    waiting = queued_run(sam, f"waiting = '{size}'")
    going = running_run(sam)
    with browser_as(browser, live_stack, sam, size=size) as page:
        page.goto("/me/runs/")
        assert fits(page)
        assert_accessible(page, f"My runs with a queued and a running run at {size}")
        shoot(page, f"my-runs-going-{size}")

        # The queued one, from the keyboard alone.
        cancel = page.get_by_role("button", name=f"Cancel run waiting = '{size}'")
        cancel.focus()
        page.keyboard.press("Enter")
        expect(row(page, "waiting =").locator(".status")).to_have_text("cancelled")
        delete = row(page, "waiting =").get_by_role("button", name=f"Delete run waiting = '{size}'")
        expect(delete).to_be_visible()
        expect(page.locator("#runs-status")).to_have_text(f"Run waiting = '{size}' cancelled.")
        # The keyboard is still on the row, not on Delete: a second Enter deletes nothing.
        assert page.evaluate("document.activeElement.closest('tr')?.textContent.includes('waiting =')")
        assert not page.evaluate("document.activeElement.matches('button')")
        assert Run.objects.get(pk=waiting.pk).status == "cancelled"

        # The running one, with the mouse: its executor stops it, and the row follows.
        page.get_by_role("button", name="Cancel run import time").click()
        expect(row(page, "import time").locator(".status")).to_have_text("cancelled", timeout=30_000)
        expect(row(page, "import time").get_by_role("button", name="Delete run import time")).to_be_visible()
        assert Run.objects.get(pk=going.pk).status == "cancelled"
        assert fits(page)
        assert_accessible(page, f"My runs after both were cancelled at {size}")
        shoot(page, f"my-runs-cancelled-{size}")

        # What the script drew works as the server's: Delete removes the run.
        delete.click()
        expect(page.locator(".messages")).to_contain_text("Run deleted")
        assert not Run.objects.filter(pk=waiting.pk).exists()


def test_my_runs_cancel_works_without_the_script(browser: Browser, live_stack, people):
    from playground.models import Run

    sam = people["sam"]
    waiting = queued_run(sam, "left = 'behind'")
    with browser_as(browser, live_stack, sam, allowed=("net::ERR_FAILED",)) as page:
        page.route(re.compile(r"/static/my-runs"), lambda route: route.abort())
        page.goto("/me/runs/")
        page.get_by_role("button", name="Cancel run left = 'behind'").click()
        expect(page.locator(".messages")).to_contain_text("Run cancelled")
        expect(row(page, "left =").locator(".status")).to_have_text("cancelled")
        assert Run.objects.get(pk=waiting.pk).status == "cancelled"
