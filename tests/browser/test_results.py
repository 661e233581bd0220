"""The result panes and the examples gallery in a real Chromium against the whole stack: what a
person sees of what JAX did with their code (Compiled), how fast it ran (Timing), the figures
it drew (Figures), and the article's walk-through as runnable examples.

Most of these run real snippets, so they depend on the runner's capture (compiled events),
notebook magics and the jaxplay helper (timing events), and its matplotlib backend (figures).
The last test feeds the page hand-made events instead, to pin down how it renders fields and
kinds it does not know.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.snippets import SLOW_COMPILE

from .playground import (RUN_TIMEOUT_MS, get_code, open_playground, run_code, set_code,
                         start_code, wait_until_finished)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The gallery's examples compile and time real networks: allow for a loaded machine.
EXAMPLE_TIMEOUT_MS = 120_000
EXAMPLES = Path(__file__).resolve().parents[2] / "playground" / "examples"

FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n"

COMPARISON = """\
import numpy as np
import jax
import jax.numpy as jnp
import jaxplay

def f(x):
    return x + x * x + x * x * x

x = np.random.randn(200, 200).astype('float32')
%timeit -n3 -r2 f(x)
jaxplay.compare({"NumPy": (f, x), "jit": (jax.jit(f), jnp.asarray(x))}, label="f on 200×200")
"""

RECOMPILING = """\
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return jnp.tanh(x) * 2.0

f(jnp.ones(3))
f(jnp.ones(3))        # the same shape: no new compilation
f(jnp.ones((2, 4)))   # a new shape: compiled again
"""

JITTED_JAX_FUNCTION = """\
import jax
import jax.numpy as jnp

fast_sin = jax.jit(jnp.sin)
print(fast_sin(jnp.ones(3)), jnp.cos(jnp.ones(3)))
"""


TRACER_BOOL = """\
import jax

@jax.jit
def relu(x):
    if x > 0:
        return x
    return 0.0

relu(1.0)
"""


def open_example(page: Page, title: str) -> None:
    page.click("#examples-button")
    menu = page.locator("#examples-menu")
    expect(menu).to_be_visible()
    menu.get_by_role("button", name=re.compile(re.escape(title))).click()
    expect(menu).to_be_hidden()


def select_tab(page: Page, name: str) -> None:
    page.click(f"#tab-{name}")
    expect(page.locator(f"#panel-{name}")).to_be_visible()


def test_it_opens_an_example_from_the_gallery_runs_it_and_shows_its_jaxpr(page: Page):
    examples = json.loads(page.locator("#examples-data").text_content())
    jit = next(e for e in examples if e["slug"] == "jit")

    open_example(page, jit["title"])

    assert get_code(page) == jit["code"]
    assert page.evaluate("location.hash") == "#example=jit"
    expect(page.locator("#file-name")).to_have_text(re.compile(r"\d\d-jit\.py"))

    page.click("#run-button")
    assert wait_until_finished(page, EXAMPLE_TIMEOUT_MS) == "succeeded"

    # The run's output stays in front; the other tabs say they have something.
    expect(page.locator("#tab-output")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tab-compiled .tab-count")).to_have_text(re.compile(r"[1-9]\d*"))

    select_tab(page, "compiled")
    rows = page.locator("#panel-compiled .compiled-row")
    expect(rows.filter(has_text="update")).to_have_count(1)
    # The jaxpr of the compiled update step, in the read-only editor: its primitives.
    view = page.locator("#panel-compiled .code-view .monaco-editor .view-lines")
    expect(view).to_contain_text("dot_general")
    expect(view).to_contain_text("tanh")
    assert "dot_general" in page.evaluate("window.playground.compiledText()")

    # StableHLO and the optimised HLO of the same function, one click away.
    page.click("#panel-compiled .segment[data-kind=stablehlo]")
    expect(view).to_contain_text("stablehlo.")
    page.click("#panel-compiled .segment[data-kind=hlo]")
    expect(view).to_contain_text("HloModule")

    # The example times its step with and without jit: one table row for each.
    select_tab(page, "timing")
    table = page.locator("#panel-timing .comparison .data-table")
    expect(table.locator("tbody tr.data-row")).to_have_count(2)
    expect(table.locator("tbody tr.data-row th")).to_have_text(["without jit", "jit"])


def test_it_runs_the_article_speed_test_and_compares_the_four_ways(page: Page):
    # Opened from a link to the gallery's example, as a reader of the article would.
    open_playground(page, path="/#example=speed-test")
    assert get_code(page) == (EXAMPLES / "01-speed-test.py").read_text()
    page.click("#run-button")
    assert wait_until_finished(page, EXAMPLE_TIMEOUT_MS) == "succeeded"

    # The article's two %timeit lines, as Jupyter prints them.
    expect(page.locator("#output")).to_contain_text("per loop (mean ± std. dev. of 7 runs")
    select_tab(page, "timing")
    panel = page.locator("#panel-timing")
    expect(panel.locator(".measure .chip", has_text="%timeit")).to_have_count(2)
    rows = panel.locator(".comparison .data-table tbody tr.data-row th")
    expect(rows).to_have_text(["NumPy", "JAX, no jit", "jit", "jit, donate_argnums=0"])
    # With the sentence that says why, beside the numbers.
    expect(panel.locator(".comparison .card-note")).to_contain_text("donate_argnums=0, XLA writes the result")
    # Donation reuses the input's buffer: the Compiled tab says how much memory is aliased.
    select_tab(page, "compiled")
    donated = page.locator("#panel-compiled .compiled-row").filter(has_text="recompiled")
    expect(donated).to_have_count(1)
    donated.click()
    expect(page.locator("#panel-compiled .stat").filter(has_text="aliased")).to_contain_text("64.0 MB")


def test_it_opens_an_example_named_in_the_link_and_keeps_the_persons_code(page: Page):
    set_code(page, "print('my own code')\n")

    open_playground(page, path="/#example=grad")

    examples = json.loads(page.locator("#examples-data").text_content())
    grad = next(e for e in examples if e["slug"] == "grad")
    assert get_code(page) == grad["code"]

    restore = page.locator("#restore-code")
    expect(restore).to_be_visible()
    restore.click()
    assert get_code(page) == "print('my own code')\n"
    expect(restore).to_be_hidden()
    assert page.evaluate("location.hash") == ""


def test_it_shows_a_matplotlib_figure_in_figures(page: Page):
    assert run_code(page, FIGURE) == "succeeded"

    expect(page.locator("#tab-output")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tab-figures .tab-count")).to_have_text("1")
    expect(page.locator("#tab-figures")).to_have_attribute("data-news", "true")

    select_tab(page, "figures")
    image = page.locator("#panel-figures img.figure-image")
    expect(image).to_have_count(1)
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    assert page.evaluate("document.querySelector('#panel-figures img.figure-image').naturalWidth") > 0
    expect(page.locator("#panel-figures figcaption")).to_contain_text("Figure 1")
    expect(page.locator("#tab-figures")).not_to_have_attribute("data-news", "true")


def test_it_shows_a_comparison_in_timing_as_a_row_per_implementation(page: Page):
    assert run_code(page, COMPARISON) == "succeeded"

    select_tab(page, "timing")
    panel = page.locator("#panel-timing")
    comparison = panel.locator(".comparison")
    expect(comparison.locator(".card-title")).to_have_text("f on 200×200")
    rows = comparison.locator(".data-table tbody tr.data-row")
    expect(rows).to_have_count(2)
    expect(rows.locator("th")).to_have_text(["NumPy", "jit"])
    expect(rows.nth(0).locator("td.cell-speedup")).to_have_text("1.00×")
    expect(rows.nth(1).locator("td.cell-speedup")).to_have_text(re.compile(r"^\d[\d.]*×$"))
    # The chart: one bar per implementation, the baseline marked.
    expect(comparison.locator(".bar-track")).to_have_count(2)
    expect(comparison.locator(".bar-speedup").first).to_have_text("baseline")

    # %timeit's measurement, as the magic printed it.
    timeit = panel.locator(".measure").filter(has_text="%timeit")
    expect(timeit).to_have_count(1)
    expect(timeit.locator(".measure-label")).to_have_text("f(x)")
    expect(timeit.locator(".measure-value")).to_have_text(re.compile(r"± .*s$"))


def test_it_lists_each_compilation_says_why_it_recompiled_and_diffs_two(page: Page):
    assert run_code(page, RECOMPILING) == "succeeded"

    select_tab(page, "compiled")
    rows = page.locator("#panel-compiled .compiled-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator(".chip-warn")).to_have_count(0)
    second = rows.nth(1)
    expect(second.locator(".chip-warn")).to_have_text("recompiled ×2")
    expect(second.locator(".row-reason")).to_contain_text("shape")

    # Where f comes from, and the compiled lines each line of the snippet became: with the
    # editor's cursor on `return jnp.tanh(x) * 2.0`, its lines in the jaxpr are marked.
    expect(page.locator("#panel-compiled .stat-link").first).to_contain_text("line 4")
    expect(page.locator("#panel-compiled .link-hint")).to_be_visible()
    page.locator("#editor .view-line").filter(has_text="return jnp.tanh(x)").click()
    marked = page.locator("#panel-compiled .code-view .linked-line")
    expect(marked).not_to_have_count(0)

    page.get_by_role("button", name="Compare", exact=True).click()
    diff = page.locator("#panel-compiled .monaco-diff-editor")
    expect(diff).to_be_visible()
    expect(diff).to_contain_text("tanh")
    expect(page.get_by_label("Left side")).to_have_value("f0")
    expect(page.get_by_label("Right side")).to_have_value("f1")


def test_it_shows_a_jax_function_the_snippet_jitted_with_where_it_lives(page: Page):
    assert run_code(page, JITTED_JAX_FUNCTION) == "succeeded"

    select_tab(page, "compiled")
    rows = page.locator("#panel-compiled .compiled-row")
    expect(rows).to_have_count(1)  # the eager jnp.cos is JAX's own, not the snippet's
    expect(rows.first).to_contain_text("sin")
    stats = page.locator("#panel-compiled .stat")
    expect(stats.filter(has_text="jitted")).to_contain_text("line 4")
    origin = stats.filter(has_text="from")
    expect(origin).to_contain_text("jax/_src/numpy/")
    assert "site-packages" in origin.get_attribute("title")
    view = page.locator("#panel-compiled .code-view .monaco-editor .view-lines")
    expect(view).to_contain_text("sin")


def test_it_says_what_xla_is_compiling_while_a_long_compile_lasts(page: Page):
    select_tab(page, "compiled")
    start_code(page, SLOW_COMPILE)
    # In the status line, and in the Compiled pane above what has compiled so far: the page's
    # state taken in one go the moment the notice shows, so the run cannot end between reads.
    seen = page.wait_for_function(
        """() => {
            const message = document.querySelector('#run-message').textContent;
            if (!message.includes('long_chain')) return null;
            const pending = document.querySelector('#panel-compiled .compiled-pending');
            return {message, pending: pending.hidden ? null : pending.textContent,
                    status: document.querySelector('#run-status').dataset.status};
        }""",
        timeout=RUN_TIMEOUT_MS,
        polling="raf",
    ).json_value()
    notice = "XLA is compiling long_chain(x: f32[8,8])…"
    assert seen == {"message": notice, "pending": notice, "status": "running"}
    assert wait_until_finished(page) == "succeeded"
    message = page.locator("#run-message")
    pending = page.locator("#panel-compiled .compiled-pending")
    # Done: the notices go with the compile, which is listed now.
    expect(message).to_have_text("")
    expect(pending).to_be_hidden()
    expect(page.locator("#panel-compiled .compiled-row").filter(has_text="long_chain")).to_have_count(1)


def test_it_explains_a_jax_error_under_its_message(page: Page):
    assert run_code(page, TRACER_BOOL) == "failed"

    box = page.locator("#error-box")
    expect(box.locator(".error-type")).to_contain_text("Error")
    explanation = box.locator(".error-explanation")
    expect(explanation).to_be_visible()
    assert len(explanation.text_content().strip()) > 20
    # Code in the sentence is code, not literal backticks; JAX's documentation link is a link.
    expect(explanation.locator("code").first).to_be_visible()
    assert "`" not in explanation.text_content()
    link = box.locator(".error-title a[href^='https://']").first
    expect(link).to_have_attribute("target", "_blank")
    assert link.get_attribute("href") == link.text_content()
    expect(box).to_contain_text("line 5")


def test_it_lists_the_libraries_with_their_versions(page: Page):
    page.click("#libraries-button")
    menu = page.locator("#libraries-menu")
    expect(menu).to_be_visible()
    names = menu.locator(".library-name")
    for name in ["numpy", "scipy", "jax", "optax", "flax", "equinox", "chex", "einops", "matplotlib", "rich"]:
        expect(names.filter(has_text=re.compile(f"^{name}$"))).to_have_count(1)
    jax_version = menu.locator(".library").filter(
        has=page.locator(".library-name", has_text=re.compile("^jax$"))).locator(".library-version")
    # Before any run: what the CPU executors report.
    expect(jax_version).to_have_text(re.compile(r"^\d+\.\d+"))
    expect(menu.locator(".menu-footer")).to_contain_text("CPU")
    page.keyboard.press("Escape")

    assert run_code(page, "print('hi')\n") == "succeeded"

    page.click("#libraries-button")
    expect(jax_version).to_have_text(re.compile(r"^\d+\.\d+"))
    expect(menu.locator(".menu-footer")).to_contain_text("where the last run ran")


# Hand-made events: fields missing, wrong types, kinds the page does not know, HTML from the
# snippet. The page must show what it can, show the rest as text, and never break.
ODD_EVENTS = [
    {"type": "started", "platform": "cpu", "libraries": "not a dict"},
    {"type": "compiled"},
    {"type": "compiled", "name": "g", "jaxpr": "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }",
     "compile_ms": "fast", "flops": None, "memory": {"temp_bytes": 128, "mystery": "?"},
     "recompile": {"count": 3}, "hlo": "HloModule g\n... [truncated: 1.2 MB total]"},
    {"type": "display", "kind": "jaxprs", "panels": [{"title": "g", "jaxpr": "{ lambda ; . let  in () }"},
                                                     {"title": "grad(g)", "error": "TypeError: not a scalar"}]},
    {"type": "display", "kind": "jaxprs", "items": "nope"},
    {"type": "timing", "label": "only a label"},
    {"type": "timing", "kind": "comparison", "rows": [{"label": "a"}, {"median_ms": 2.0}, 7]},
    {"type": "timing", "kind": "from the future", "label": "new", "quality": 0.9},
    {"type": "display", "mime": "image/png", "data": "not base64 <script>"},
    {"type": "display", "mime": "text/html", "html": "<b id='injected'>bold</b><script>window.hacked = 1</script>"},
    {"type": "display", "kind": "hologram", "value": [1, 2, 3]},
    {"type": "display", "mime": "text/plain", "text": "42"},
    {"type": "brand-new-type", "text": "ignored"},
    {"type": "error", "exc_type": "TracerBoolConversionError", "message": "bool() on a tracer", "line": None,
     "explanation": "Python's if cannot look at a traced value."},
    {"type": "finished", "status": "failed", "wall_ms": 12},
]


def test_it_renders_events_with_missing_fields_and_unknown_kinds(page: Page):
    events = [{"seq": i, **e} for i, e in enumerate(ODD_EVENTS, 1)]
    created = {"id": "odd", "status": "queued", "device": "cpu", "ws": "/ws/runs/odd/"}
    page.route("**/api/runs", lambda route: route.fulfill(
        status=201, content_type="application/json", body=json.dumps(created)))

    def serve(ws):
        def send_events(_message=None):
            if _message is not None:  # the page's start, on its run socket
                ws.send(json.dumps({"type": "started_run", "run": created}))
            for event in events:
                ws.send(json.dumps(event))

        if ws.url.endswith("/ws/runs/new/"):
            ws.on_message(send_events)
        else:
            send_events()

    page.route_web_socket(re.compile(r"/ws/runs/"), serve)
    page.reload()  # the run socket the page keeps open goes through the route too
    set_code(page, "print('anything')\n")
    page.click("#run-button")
    assert wait_until_finished(page, 10_000) == "failed"

    # Output: the plain value, and the error with its explanation.
    expect(page.locator("#output .value")).to_have_text("42\n")
    expect(page.locator("#error-box .error-explanation")).to_contain_text("cannot look at a traced value")

    # Compiled: both compilations (one without a name) and the usable side-by-side display.
    expect(page.locator("#tab-compiled .tab-count")).to_have_text("3")
    select_tab(page, "compiled")
    rows = page.locator("#panel-compiled .compiled-row")
    expect(rows.nth(0).locator(".row-name")).to_have_text("(anonymous)")
    expect(rows.nth(1).locator(".chip-warn")).to_have_text("recompiled ×3")
    rows.nth(1).click()
    expect(page.locator("#panel-compiled .stat").filter(has_text="temp")).to_contain_text("128 B")
    page.click("#panel-compiled .segment[data-kind=hlo]")
    expect(page.locator("#panel-compiled .code-view-note")).to_contain_text("1.2 MB total")
    expect(page.locator("#panel-compiled .segment[data-kind=stablehlo]")).to_be_disabled()
    rows.nth(2).click()
    columns = page.locator("#panel-compiled .jaxprs-column")
    expect(columns).to_have_count(2)
    expect(columns.nth(1)).to_contain_text("not a scalar")

    # Timing: a single, a comparison with what its rows have, and the unknown kind as fields.
    select_tab(page, "timing")
    expect(page.locator("#panel-timing .measure-label")).to_have_text("only a label")
    expect(page.locator("#panel-timing .comparison tbody tr.data-row")).to_have_count(2)
    expect(page.locator("#panel-timing .kv")).to_contain_text("quality")

    # Figures: the bad image is not an image; HTML is text; the unknown kind is shown as data.
    select_tab(page, "figures")
    expect(page.locator("#panel-figures img")).to_have_count(0)
    expect(page.locator("#panel-figures")).to_contain_text("bold")
    expect(page.locator("#injected")).to_have_count(0)
    assert page.evaluate("window.hacked") is None
    expect(page.locator("#panel-figures")).to_contain_text("hologram")


def test_a_compilation_loaded_from_the_nodes_cache_says_so(page: Page):
    """Run the same jit again once the node has compiled it: its row in Compiled has the
    "cached" chip and calls its time the load; the first run's row called it the compile."""
    import time
    import uuid

    code = ("import jax, jax.numpy as jnp\n"
            f"f = jax.jit(lambda x: jnp.cos(x) * x + {uuid.uuid4().int % 10**6 + 0.5})\n"
            "print(f(jnp.ones(4)).sum())\n")
    assert run_code(page, code) == "succeeded"
    select_tab(page, "compiled")
    row = page.locator("#panel-compiled .compiled-row").first
    expect(row.locator(".row-time")).to_be_visible()
    assert row.locator(".chip", has_text="cached").count() == 0
    assert "compile" in row.locator(".row-time").evaluate("e => getComputedStyle(e, '::before').content")
    deadline = time.monotonic() + 60  # the node compiles the module once it is idle
    while True:
        assert run_code(page, code) == "succeeded"
        select_tab(page, "compiled")
        if row.locator(".chip", has_text="cached").count():
            break
        assert time.monotonic() < deadline, "the jit was never loaded from the node's compile cache"
        page.wait_for_timeout(1000)
    chip = row.locator(".chip", has_text="cached")
    expect(chip).to_have_attribute("title", re.compile(r"compile cache", re.I))
    assert "load" in row.locator(".row-time").evaluate("e => getComputedStyle(e, '::before').content")
    page.locator("#panel-compiled .stat").filter(has_text="load").first.wait_for()
