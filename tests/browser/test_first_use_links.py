"""What a person meets first, continued, at 1440, 1024 and 390 px, each page still axe-clean: a
fork that looks like itself and leaves its original's page as it was, a snippet's notebook that
runs without the playground, a recompilation that names the argument as the code does, and a
jaxplay comparison shown once.

Screenshots go to /tmp/screens/first-use-*.png for a person to look at.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, expect

from .playground import assert_accessible, get_code, open_playground, run_code, set_code
from .test_first_use import SIZES, new_page, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ORIGINAL = """\
import jax.numpy as jnp
import jaxplay

x = jnp.arange(4.0)
jaxplay.show(x ** 2)
"""
FORKED = ORIGINAL + "jaxplay.show(x ** 3)\n"

RECOMPILED_AND_COMPARED = """\
import numpy as np
import jax
import jax.numpy as jnp
import jaxplay

@jax.jit
def f(x):
    return jnp.tanh(x) * 2.0

f(jnp.ones(3))
f(jnp.ones((2, 4)))   # a new shape: compiled again
xs = np.linspace(0, 1, 1000, dtype=np.float32)
jaxplay.compare({"numpy": (np.tanh, xs), "jax.numpy": (jnp.tanh, jnp.asarray(xs))}, repeats=2)
"""


# 9. A fork has a title of its own, and the original's page keeps the original's code -------------

@pytest.mark.parametrize("size", list(SIZES))
def test_a_fork_has_its_own_title_and_the_original_keeps_its_code(browser: Browser, live_stack, size: str):
    page = new_page(browser, live_stack, size)
    try:
        original = page.request.post("/api/snippets", data={"code": ORIGINAL, "title": "Squares"}).json()["slug"]
        open_playground(page, path=f"/s/{original}")
        set_code(page, FORKED)  # the edits are this page's draft of the original, for now

        page.locator("#share-button").click()
        dialog = page.get_by_role("dialog", name="Share this code")
        expect(page.locator("#share-title-input")).to_have_value("Squares (fork)")
        with page.expect_response(lambda r: r.url.endswith("/api/snippets") and r.request.method == "POST") as made:
            dialog.get_by_role("button", name="Create link").click()
        fork = made.value.json()["slug"]
        assert made.value.request.post_data_json["parent"] == original and fork != original
        note = page.locator("#share-fork-note")
        expect(note).to_be_visible()
        expect(note).to_have_text("A fork of “Squares”, with a link of its own: the original keeps its code.")
        assert_accessible(page, f"the Share dialog after a fork at {size}")
        shoot(page, f"fork-shared-{size}")
        drafts = json.loads(page.evaluate("localStorage.getItem('playground.drafts') || '{}'"))
        assert f"snippet:{original}" not in drafts
        page.keyboard.press("Escape")

        # Back on the original: its own code, and its fork listed under a name of its own.
        open_playground(page, path=f"/s/{original}")
        assert get_code(page) == ORIGINAL
        expect(page.locator("#file-name")).to_have_attribute("data-modified", "false")
        forks = page.locator(".snippet-forks")
        expect(forks).to_contain_text("1 fork")
        expect(forks.get_by_role("link", name="Squares (fork)")).to_have_attribute("href", f"/s/{fork}")
        assert_accessible(page, f"the original with its fork at {size}")
        shoot(page, f"fork-original-{size}")

        # The fork's own page: its title and its code.
        forks.get_by_role("link", name="Squares (fork)").click()
        page.wait_for_function("() => window.playground && window.playground.snippet")
        expect(page.get_by_role("heading", name="Squares (fork)", level=1)).to_be_visible()
        expect(page).to_have_title("Squares (fork) · JAX Playground")
        assert get_code(page) == FORKED
        expect(page.locator(".snippet-parent")).to_contain_text("forked from Squares")
        assert page.errors == []
    finally:
        page.context.close()


# 10. A snippet's notebook defines jaxplay, so it runs without the playground ---------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_the_notebook_link_gives_a_notebook_that_defines_jaxplay(browser: Browser, live_stack, size: str):
    page = new_page(browser, live_stack, size)
    try:
        slug = page.request.post("/api/snippets", data={"code": ORIGINAL, "title": "Squares"}).json()["slug"]
        open_playground(page, path=f"/s/{slug}")
        link = page.locator(".snippet-downloads").get_by_role("link", name=".ipynb")
        expect(link).to_be_visible()
        with page.expect_download() as info:
            link.click()
        assert info.value.suggested_filename == f"{slug}.ipynb"
        nb = json.loads(open(info.value.path()).read())
        header, helpers, code = nb["cells"]
        assert "The first code cell defines `jaxplay`" in "".join(header["source"])
        assert "".join(helpers["source"]).startswith("#@title jaxplay, the JAX Playground's helpers")
        assert "".join(code["source"]) == ORIGINAL
        assert_accessible(page, f"a snippet's page with its downloads at {size}")
        assert page.errors == []
    finally:
        page.context.close()


# 11. A recompilation names the argument as written; a comparison is shown once -------------------

@pytest.mark.parametrize("size", list(SIZES))
def test_a_recompilation_keeps_the_arguments_name_and_a_comparison_no_repr(browser: Browser, live_stack,
                                                                            size: str):
    page = new_page(browser, live_stack, size)
    try:
        open_playground(page)
        assert run_code(page, RECOMPILED_AND_COMPARED) == "succeeded"
        output = page.locator("#output")
        expect(output).to_contain_text("speed-up relative to numpy")
        assert "<Comparison" not in output.text_content()

        page.locator("#tab-compiled").click()
        reason = page.locator("#panel-compiled .row-reason")
        expect(reason).to_have_count(1)  # f's second compilation
        expect(reason).to_be_visible()
        expect(reason).to_have_text("Argument x has a new shape: f32[3] → f32[2,4]")
        page.locator("#panel-compiled .compiled-row").filter(has=page.locator(".row-reason")).click()
        expect(page.locator("#panel-compiled")).not_to_contain_text(re.compile(r"\bX has a new shape"))
        assert_accessible(page, f"a recompilation's reason at {size}")
        shoot(page, f"recompiled-reason-{size}")
        assert page.errors == []
    finally:
        page.context.close()
