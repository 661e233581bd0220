"""A run on a node of exclusive chips in Chromium: while someone else's run holds the stand-in
TPU's one chip, the page says where the run stands in line, keeps it "queued", and once it runs
shows the wait apart from the run's own time."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import STANDIN

from .playground import SCREENS, open_playground, output, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_run_waiting_for_the_chip_says_where_it_stands_and_its_wait_apart(
        page: Page, live_stack, standin_tpu, django_user_model):
    from tests.people import PASSWORD, client_of

    open_playground(page, reload=True)  # the list with the stand-in TPU online
    label = page.eval_on_selector(f'#device-select option[value="{STANDIN}"]', "o => o.textContent")
    assert re.fullmatch(r"TPU: cpu · [01] of 1 chips free", label), label  # its chips, not task threads
    page.select_option("#device-select", STANDIN)
    # Someone else holds the chip for a few seconds.
    other = client_of(django_user_model.objects.create_user("chip-holder", password=PASSWORD))
    held = other.post("/api/runs", {"code": "import time\ntime.sleep(4)\n", "device": STANDIN},
                      content_type="application/json")
    assert held.status_code == 201, held.content
    holder = held.json()["id"]
    for _ in range(100):  # until it holds the chip
        if any(e["type"] == "started" for e in live_stack.get(f"/api/runs/{holder}")["events"]):
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the holder's run did not start")

    set_code(page, "print('my turn')\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#run-message")).to_have_text(re.compile(r"^Waiting for a TPU chip: 0 ahead"), timeout=10_000)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "queued")
    SCREENS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENS / "waiting-for-a-chip.png")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "my turn\n"
    expect(page.locator("#run-info")).to_contain_text(re.compile(r"chip 0 · waited \d+(\.\d+)? s for the chip"))
    assert live_stack.wait_finished(holder)["status"] == "succeeded"
