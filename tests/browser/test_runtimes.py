"""The JAX version picker in Chromium, with the suite's executor (the default runtime) and one of
jax-0.4.38 online: a person runs on the old JAX, shares it, and the link, opened elsewhere,
says it is pinned and runs there again, whatever the home page's picker says."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import OLD_RUNTIME

from .playground import SCREENS, open_playground, output, set_code, wait_until_finished
from .test_sharing import fresh_page, path_of, share

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "import jax\nprint('jax', jax.__version__)\n"

def runtime_options(page: Page) -> list[tuple[str, str, bool]]:
    return page.eval_on_selector_all(
        "#runtime-select option", "els => els.map(o => [o.value, o.textContent, o.disabled])")

def test_a_run_on_an_older_jax_is_shared_and_its_link_runs_there_again(page: Page, browser: Browser, live_stack,
                                                                        old_runtime_worker):
    open_playground(page, reload=True)
    # The default first; a runtime no worker serves says so and cannot be chosen.
    expect(page.locator("#runtime-select option").nth(1)).to_have_text("JAX 0.6.2 · not on CPU")
    offered = runtime_options(page)
    assert [(v, d) for v, _, d in offered] == [("jax-0.12.0.1", False), ("jax-0.6.2", True), ("jax-0.4.38", False)]
    assert offered[0][1] == "JAX 0.12.0.1" and offered[2][1] == "JAX 0.4.38"
    assert page.input_value("#runtime-select") == "jax-0.12.0.1"

    page.select_option("#runtime-select", OLD_RUNTIME)
    set_code(page, CODE)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "jax 0.4.38\n"
    run = page.evaluate("window.playground.runId()")
    assert live_stack.wait_finished(run)["runtime"] == OLD_RUNTIME
    SCREENS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENS / "runtime-picker.png")

    url, posted, _ = share(page, title="On the last 0.4")
    assert posted["runtime"] == OLD_RUNTIME and posted["run"] == run
    page.keyboard.press("Escape")

    with fresh_page(browser, live_stack) as (other, _):
        open_playground(other, path=path_of(url))
        expect(other.locator("#output")).to_have_text("jax 0.4.38\n")
        expect(other.locator(".snippet-strip")).to_contain_text("runtime jax-0.4.38")
        assert other.input_value("#runtime-select") == OLD_RUNTIME  # pinned, not the default
        set_code(other, CODE + "print('again')\n")
        other.keyboard.press("Control+Enter")
        assert wait_until_finished(other) == "succeeded"
        assert output(other) == "jax 0.4.38\nagain\n"
        other.screenshot(path=SCREENS / "snippet-pinned-runtime.png")
    # The home page remembers the person's own choice; a pinned snippet does not change it.
    open_playground(page, reload=True)
    assert page.input_value("#runtime-select") == OLD_RUNTIME
