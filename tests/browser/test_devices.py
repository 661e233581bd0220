"""The device picker in Chromium with two executors online: the suite's CPU one and a second
posing as ``gpu:test``. A person picks the specific kind, runs on it, shares the run, and the
link opens with that device chosen and the saved output shown."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import POSING

from .playground import SCREENS, open_playground, output, set_code, wait_until_finished
from .test_sharing import fresh_page, path_of, share

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "import jax\nprint('ran on', jax.devices()[0].platform, len(jax.devices()))\n"


def options(page: Page) -> list[tuple[str, str, bool]]:
    return page.eval_on_selector_all(
        "#device-select option", "els => els.map(o => [o.value, o.textContent, o.disabled])")


def test_a_specific_kind_is_picked_run_on_and_shared(page: Page, browser: Browser, live_stack, posing_gpu_worker):
    open_playground(page, reload=True)  # the list as it is with the posing worker online
    offered = options(page)
    values = [value for value, _, _ in offered]
    assert values == ["cpu", "gpu", POSING, "tpu"], offered
    labels = {value: label for value, label, _ in offered}
    assert re.fullmatch(r"GPU: cpu · \d+ free", labels[POSING]), labels
    assert labels["tpu"] == "TPU · offline" and dict((v, d) for v, _, d in offered)["tpu"] is True

    page.select_option("#device-select", POSING)
    set_code(page, CODE)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "ran on cpu 1\n"  # the posing worker has one CPU device
    run = page.evaluate("window.playground.runId()")
    detail = live_stack.wait_finished(run)  # the page heard the end from Redis; the database follows
    assert (detail["device"], detail["ran_on"]) == (POSING, POSING)
    assert detail["worker"].startswith("gpu-gpu-test@")
    SCREENS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENS / "device-picker-specific.png")

    url, posted, _ = share(page, title="On gpu:test")
    assert posted["device"] == POSING and posted["run"] == run
    page.keyboard.press("Escape")

    with fresh_page(browser, live_stack) as (other, _):
        open_playground(other, path=path_of(url))
        expect(other.locator("#output")).to_have_text("ran on cpu 1\n")
        expect(other.locator(".snippet-strip")).to_contain_text(re.compile(r"saved with JAX \S+ on GPU:TEST"))
        assert other.input_value("#device-select") == POSING  # the snippet's own device
        other.screenshot(path=SCREENS / "snippet-specific-device.png")
