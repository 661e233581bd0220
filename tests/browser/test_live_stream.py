"""The page follows runs that are hard to follow, without a reload: a long quiet stretch, a
flood past the output cap (events sent in parts), and daphne restarting under it."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .playground import RUN_TIMEOUT_MS, output, run_code, start_code, wait_until_finished


def test_a_run_quiet_for_8_s_ends_on_the_page(page: Page):
    status = run_code(page, "import time\nprint('a', flush=True)\ntime.sleep(8)\nprint('b')\n",
                      timeout_ms=RUN_TIMEOUT_MS + 10_000)
    assert status == "succeeded"
    assert output(page) == "a\nb\n"


def test_a_flood_ends_on_the_page_with_its_first_output_and_its_limit(page: Page):
    status = run_code(page, "import sys\nprint('first', flush=True)\nwhile True:\n    sys.stdout.write('y' * 65536)\n")
    assert status == "limit_exceeded"
    expect(page.locator("#run-status")).to_have_text("stopped: output limit")  # words, not the API's name
    expect(page.locator("#run-message")).to_contain_text("output limit of 1 MiB exceeded")
    # The megabyte-long line is drawn cut, with the rest one click away.
    text = output(page)
    assert text.startswith("first\n" + "y" * 4000)
    assert len(text) < 5000
    more = page.locator("#output .term-more")
    expect(more).to_have_text(re.compile(r"… [\d,]+ more characters"))
    more.click()
    expect(more).to_have_count(0)
    text = output(page)
    assert text.startswith("first\ny")
    assert len(text) >= 1024**2 - 10


def test_a_large_event_sent_in_parts_is_shown_whole(page: Page):
    # One figure of about 1.5 MB of PNG: more than one websocket message carries it.
    code = ("import numpy as np, matplotlib.pyplot as plt\nrng = np.random.default_rng(0)\n"
            "plt.figure(figsize=(12, 12))\nplt.imshow(rng.random((1000, 1000)))\nplt.show()\nprint('drawn')\n")
    assert run_code(page, code) == "succeeded"
    page.click("#tab-figures")
    size = page.wait_for_function(
        "() => { const img = document.querySelector('#panel-figures img.figure-image');"
        " return img && img.complete && img.naturalWidth > 0 && img.src.length; }",
        timeout=30_000).json_value()
    assert size > 1024**2


def test_the_page_shows_every_event_once_across_a_daphne_restart(page: Page, live_stack):
    code = "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(0.75)\n"
    start_code(page, code)
    expect(page.locator("#output")).to_contain_text("tick 1", timeout=RUN_TIMEOUT_MS)

    live_stack.restart_web()

    assert wait_until_finished(page, timeout_ms=RUN_TIMEOUT_MS) == "succeeded"
    assert output(page) == "".join(f"tick {i}\n" for i in range(8))
