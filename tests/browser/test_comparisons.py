"""Comparing across runtimes in Chromium, with the suite's executor (the default runtime) and one of
jax-0.4.38 online: Compare on the playground runs the editor's code on both, and the comparison's
link shows the two outputs, a diff of each compiled function and one timing table, live and
again in a fresh profile; a snippet pinned to the old JAX runs on the newest beside its saved
output. Checked at 1440, 1024 and 390 px, and with axe."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from executor import runtimes
from tests.conftest import OLD_RUNTIME

from .playground import SCREENS, assert_accessible, open_playground, set_code
from .test_sharing import fresh_page, path_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_JAX = runtimes.FIRST[4:]
CODE = """\
import jax
import jax.numpy as jnp
print("jax", jax.__version__)
f = jax.jit(lambda x: jnp.cumsum(x) ** 2)
x = jnp.arange(64.0)
%timeit -n 5 -r 3 f(x).block_until_ready()
print(float(f(x)[-1]))
"""
SIZES = {"wide": (1440, 900), "laptop": (1024, 768), "phone": (390, 844)}


def wait_both_finished(page: Page) -> list[str]:
    page.wait_for_function("() => window.playground.statuses().every(s => s)", timeout=90_000)
    return page.evaluate("window.playground.statuses()")


def test_compare_runs_the_code_on_two_runtimes_and_the_link_shows_both(page: Page, browser: Browser, live_stack,
                                                                       old_runtime_worker):
    live_stack.wait_runtime(OLD_RUNTIME)
    open_playground(page, reload=True)
    set_code(page, CODE)
    page.get_by_role("button", name="Compare JAX versions").click()
    dialog = page.get_by_role("dialog", name="Compare on two JAX versions or devices")
    expect(dialog).to_be_visible()
    # A is the page's choice (the default); B the newest other JAX the CPU workers serve.
    expect(page.locator("#compare-b-runtime")).to_be_focused()
    assert page.input_value("#compare-a-runtime") == runtimes.FIRST
    expect(page.locator("#compare-b-runtime")).to_have_value(OLD_RUNTIME)
    expect(page.locator("#compare-b-runtime option[value='jax-0.6.2']")).to_have_text("JAX 0.6.2 · not on CPU")
    assert_accessible(page, "the Compare dialog open")
    # Chosen by keyboard at once, before the runtimes' list is in: the choice stays.
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Compare JAX versions").click()
    expect(page.locator("#compare-b-runtime")).to_be_focused()
    page.keyboard.press("End")
    page.keyboard.press("ArrowUp")
    page.wait_for_timeout(1000)
    expect(page.locator("#compare-b-runtime")).to_have_value("jax-0.6.2")
    # The same twice is refused in the dialog, before anything is sent.
    page.select_option("#compare-b-runtime", runtimes.FIRST)
    page.click("#compare-submit")
    expect(page.locator("#compare-error")).to_contain_text("A and B are the same")
    page.select_option("#compare-b-runtime", OLD_RUNTIME)
    page.click("#compare-submit")
    page.wait_for_url(re.compile(r"/compare/[0-9a-z]+$"))
    expect(page.locator("h1")).to_have_text(f"JAX {NEW_JAX} · CPU vs JAX 0.4.38 · CPU")

    assert wait_both_finished(page) == ["succeeded", "succeeded"]
    stdout = page.evaluate("window.playground.stdout()")
    assert stdout[0].startswith(f"jax {NEW_JAX}\n") and stdout[1].startswith("jax 0.4.38\n"), stdout
    summary = page.locator("#panel-output .compare-summary")
    expect(summary).to_contain_text("Both succeeded; their printed output differs")
    expect(page.locator("#side-A-status")).to_have_text("succeeded")
    expect(page.locator("#side-B-info")).to_contain_text("JAX 0.4.38")

    # Compiled: the function both compiled, A against B, in a diff editor with both texts.
    page.get_by_role("tab", name=re.compile("^Compiled")).click()
    functions = page.evaluate("window.playground.functions()")
    assert [f["label"] for f in functions] == ["<lambda>"], functions
    expect(page.locator("#panel-compiled .compiled-row")).to_have_count(1)
    diff = page.locator("#panel-compiled .monaco-diff-editor")
    expect(diff).to_be_visible()
    expect(diff.locator(".editor.original .view-lines")).to_contain_text("cumsum")
    expect(diff.locator(".editor.modified .view-lines")).to_contain_text("cumsum")
    page.select_option(".compare-kind", "hlo")
    expect(diff.locator(".editor.modified .view-lines")).to_contain_text("HloModule")

    # Timing: the compile, the %timeit and the whole run, each with B's speed against A's.
    page.get_by_role("tab", name=re.compile("^Timing")).click()
    rows = page.evaluate("window.playground.timings()")
    assert [r["label"] for r in rows] == ["compile <lambda>", "f(x).block_until_ready()", "whole run (wall)"], rows
    assert all(r["a"] > 0 and r["b"] > 0 and re.fullmatch(r"B [\d.]+× (faster|slower)|about the same", r["verdict"])
               for r in rows), rows
    expect(page.locator(".compare-timing tbody tr")).to_have_count(3)
    assert_accessible(page, "a comparison's Timing tab")
    SCREENS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENS / "comparison-timing.png")

    # The link, in a fresh profile: the same two runs, from the record, nothing run again.
    url = page.url
    for size, (width, height) in SIZES.items():
        with fresh_page(browser, live_stack, viewport={"width": width, "height": height}) as (other, requests):
            other.goto(path_of(url))
            assert wait_both_finished(other) == ["succeeded", "succeeded"]
            assert other.evaluate("window.playground.stdout()") == stdout
            assert not [r for r in requests if r[0] == "POST"], requests
            assert other.evaluate("document.documentElement.scrollWidth <= innerWidth"), size
            other.screenshot(path=SCREENS / f"comparison-{size}.png")
            if size == "phone":
                # The two columns stack: B under A, each the page's width.
                a, b = (other.locator(".compare-side").nth(i).bounding_box() for i in range(2))
                assert b["y"] >= a["y"] + a["height"] - 1 and a["width"] > 300, (a, b)
            assert_accessible(other, f"a comparison at {size}")
            other.evaluate("window.playground.selectTab('timing')")
            assert_accessible(other, f"a comparison's Timing tab at {size}")


def test_a_pinned_snippet_runs_on_the_newest_beside_its_saved_output(page: Page, live_stack, old_runtime_worker):
    live_stack.wait_runtime(OLD_RUNTIME)
    code = "import jax\nprint(jax.tree_map(lambda v: v * 3, [1, 2]))\n"
    _, run = live_stack.post("/api/runs", {"code": code, "runtime": OLD_RUNTIME})
    live_stack.wait_finished(run["id"])
    _, snippet = live_stack.post("/api/snippets", {"code": code, "run": run["id"], "title": "Old tree_map"})
    open_playground(page, path=f"/s/{snippet['slug']}")
    button = page.get_by_role("button", name=f"Run on the newest, JAX {NEW_JAX}")
    expect(button).to_be_visible()
    button.click()
    page.wait_for_url(re.compile(r"/compare/[0-9a-z]+$"))
    assert wait_both_finished(page) == ["succeeded", "failed"]
    assert page.evaluate("window.playground.stdout()")[0] == "[3, 6]\n"
    expect(page.locator("#side-A")).to_contain_text("saved output")
    expect(page.get_by_role("link", name="Old tree_map")).to_have_attribute("href", f"/s/{snippet['slug']}")
    b = page.locator(".compare-column").nth(1)
    expect(b.locator(".error-box:not([hidden])")).to_contain_text("jax.tree.map")
    expect(b).to_contain_text(OLD_RUNTIME)
    assert_accessible(page, "a pinned snippet beside the newest")
    page.screenshot(path=SCREENS / "comparison-newest.png")

    # Run again: both sides anew, under a new link.
    first = page.url
    page.get_by_role("button", name="Run again").click()
    page.wait_for_url(lambda u: u != first and "/compare/" in u)
    assert wait_both_finished(page) == ["succeeded", "failed"]
    expect(page.locator("#side-A")).not_to_contain_text("saved output")
