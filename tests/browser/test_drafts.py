"""Drafts never get lost: the person's own code and every example they edit are drafts of their
own, listed in the Examples menu and restorable after reloads; a signed-in person's drafts follow
them to another browser."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import get_code, open_playground, set_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OWN = "print('my own code')\n"


def examples(page: Page) -> dict[str, dict]:
    return {e["slug"]: e for e in json.loads(page.locator("#examples-data").text_content())}


def open_from_menu(page: Page, name: str | re.Pattern) -> None:
    page.click("#examples-button")
    menu = page.locator("#examples-menu")
    expect(menu).to_be_visible()
    menu.get_by_role("button", name=name).first.click()
    expect(menu).to_be_hidden()


def type_at_end(page: Page, text: str) -> None:
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def test_the_own_code_and_each_edited_example_are_separate_drafts(page: Page):
    ex = examples(page)
    set_code(page, OWN)

    # Open an example, edit it, open another: the edit is not what "Restore" brings back.
    open_from_menu(page, re.compile(re.escape(ex["grad"]["title"])))
    assert get_code(page) == ex["grad"]["code"]
    type_at_end(page, "# my change to grad\n")
    open_from_menu(page, re.compile(re.escape(ex["vmap"]["title"])))
    assert get_code(page) == ex["vmap"]["code"]
    page.click("#restore-code")
    assert get_code(page) == OWN

    # After a reload both drafts are listed, newest first, and each comes back whole.
    open_playground(page, reload=True)
    assert get_code(page) == OWN
    page.click("#examples-button")
    drafts = page.locator("#examples-menu .draft-item")
    expect(drafts).to_have_count(2)
    expect(drafts.nth(0)).to_contain_text(ex["grad"]["title"])
    expect(drafts.nth(0)).to_contain_text("edited just now")
    expect(drafts.nth(1)).to_contain_text("Your code")
    expect(page.locator("#examples-menu .example-item[data-slug=grad]")).to_contain_text("edited")
    drafts.nth(0).click()
    assert "# my change to grad" in get_code(page)
    expect(page.locator("#file-name")).to_have_attribute("data-modified", "true")
    expect(page.locator("#reset-code")).to_have_text("Reset example")

    # The example opened from its link shows the draft too: the edit is never hidden.
    open_playground(page, path="/#example=vmap")
    open_playground(page, path="/#example=grad")
    assert "# my change to grad" in get_code(page)

    # Deleting a draft from the menu: gone after a reload, the example back to its own code.
    page.click("#examples-button")
    page.get_by_role("button", name=re.compile(f"Delete the draft “{re.escape(ex['grad']['title'])}”")).click()
    expect(page.locator("#examples-menu .draft-item")).to_have_count(1)
    assert get_code(page) == ex["grad"]["code"]
    open_playground(page, reload=True)
    assert get_code(page) == ex["grad"]["code"]


def test_drafts_of_the_earlier_single_draft_storage_are_kept(page: Page):
    ex = examples(page)
    page.evaluate("""([grad]) => {
        localStorage.clear();
        localStorage.setItem('playground.code', grad + '# edited before\\n');
        localStorage.setItem('playground.example', 'grad');
        localStorage.setItem('playground.scratch', 'print("kept aside")\\n');
    }""", [ex["grad"]["code"]])
    open_playground(page, reload=True)
    assert get_code(page) == ex["grad"]["code"] + "# edited before\n"
    page.click("#restore-code")
    assert get_code(page) == 'print("kept aside")\n'
    assert page.evaluate("localStorage.getItem('playground.code')") is None


def test_a_signed_in_person_s_drafts_follow_them_to_another_browser(browser: Browser, live_stack):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import Draft

    user = get_user_model().objects.create_user("grace", password="compiler-1952-a0")
    client = Client()
    client.force_login(user)
    cookie = [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_stack.url}]

    first = browser.new_context(base_url=live_stack.url)
    first.add_cookies(cookie)
    page = first.new_page()
    open_playground(page)
    set_code(page, "print('written on the laptop')\n")
    page.wait_for_function("() => !JSON.parse(localStorage.getItem('playground.drafts')).own.dirty")
    assert Draft.objects.get(user=user, key="own").code == "print('written on the laptop')\n"
    first.close()

    second = browser.new_context(base_url=live_stack.url)
    second.add_cookies(cookie)
    other = second.new_page()
    open_playground(other)
    other.wait_for_function("() => window.playground.getCode() === \"print('written on the laptop')\\n\"")
    other.click("#examples-button")
    expect(other.locator("#examples-menu .menu-sub").first).to_contain_text("your account")
    second.close()
