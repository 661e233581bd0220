"""A room in Chromium: ten people signed out behind one address (every test's is 127.0.0.1), each
in a browser of their own (a context: its own cookies), open the playground and press Run on a
snippet that lasts three seconds, together. With fair shares as deployed, the address's own share
(8 at once) would refuse two of them; each browser's identity gives each a share of its own
within the room, and every run ends succeeded. The stack is this file's own: shares on."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.conftest import own_stack

from .playground import open_playground, run_status, start_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PEOPLE = 10
SNIPPET = "import time\ntime.sleep(3)\nprint('done')\n"


@pytest.fixture(scope="module")
def shares_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("room-browser", 8, tmp_path_factory, RUN_RATE_LIMIT_PER_MINUTE="30",
                   RUN_MAX_ACTIVE_PER_CLIENT="4", RUN_BUDGET_S_PER_HOUR="1800", RUN_BUDGET_S_PER_DAY="14400",
                   RUN_QUEUE_MAX="500") as stack:
        yield stack


def test_ten_people_in_their_own_browsers_behind_one_address_all_run_at_once(browser: Browser, shares_stack):
    contexts = [browser.new_context(base_url=shares_stack.url, viewport={"width": 1024, "height": 700})
                for _ in range(PEOPLE)]
    try:
        pages = []
        for context in contexts:
            page = context.new_page()
            open_playground(page)
            pages.append(page)
        # Each browser was given an identity of its own by the page it loaded.
        identities = {cookie["value"] for c in contexts for cookie in c.cookies() if cookie["name"] == "browser"}
        assert len(identities) == PEOPLE
        for page in pages:
            start_code(page, SNIPPET)
        statuses = [wait_until_finished(page, timeout_ms=120_000) for page in pages]
        assert statuses == ["succeeded"] * PEOPLE, [(run_status(p), p.locator("#output").text_content()[:200])
                                                    for p in pages]
        assert all("done" in page.locator("#output").text_content() for page in pages)
    finally:
        for context in contexts:
            context.close()
