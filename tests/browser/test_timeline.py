"""The Timeline tab (profile a run) in Chromium: a synthetic trace of 100,000 events over 8 device
lanes given to the page's own pane draws, W/S/A/D and the buttons move the view the way they say,
a click shows a slice and a collective's wait on every device, the summary has a row per device;
Profile beside Run is a remembered toggle that sends the run's options; a saved run's profile on
a snippet's page links its device ops to their HLO line; a comparison shows both timelines on one
time scale and a table of op kinds; and, end to end, a pmap run with Profile on shows 8 device
lanes whose ops link to the Compiled tab. Checked with axe, light and dark; screenshots beside
the other pages' (SCREENS)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets

import pytest
from playwright.sync_api import Browser, Page, expect

from bench.profile_page import SHOW, SYNTHETIC_TRACE_JS
from executor import runtimes
from tests.conftest import OLD_RUNTIME

from .playground import SCREENS, assert_accessible, open_playground, set_code, wait_until_finished
from .test_sharing import fresh_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = SCREENS
DEVICES = [f"TFRT_CPU_{i}" for i in range(8)]


def show_synthetic(page: Page, events: int = 100_000, devices: int = 8, event: dict | None = None) -> dict:
    """The synthetic trace (bench/profile_page.py) drawn in the Timeline tab through the page's
    hook; the X events it had and the time to its first frame."""
    if event is None:
        return page.evaluate(SHOW, {"generator": SYNTHETIC_TRACE_JS, "events": events, "devices": devices})
    return page.evaluate(
        """async ({generator, events, devices, event}) => {
             const trace = eval(generator)({events, devices});
             const stats = await window.playground.showTrace(trace, event);
             return {count: trace.traceEvents.filter((e) => e.ph === "X").length, firstDrawMs: stats.firstDrawMs};
           }""",
        {"generator": SYNTHETIC_TRACE_JS, "events": events, "devices": devices, "event": event})


def synthetic_trace(page: Page, events: int) -> dict:
    return page.evaluate(f"({SYNTHETIC_TRACE_JS})({{events: {events}, devices: 8}})")


def view(page: Page) -> dict:
    return page.evaluate("window.playground.timelineStats().view")


def span(v: dict) -> float:
    return v["end"] - v["start"]


def press(page: Page, key: str, times: int = 1) -> dict:
    """Presses ``key`` on the focused canvas and waits for the frame it asked for."""
    for _ in range(times):
        page.keyboard.press(key)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return view(page)


def narrower_than(page: Page, width: float) -> None:
    page.wait_for_function("w => (v => v.end - v.start)(window.playground.timelineStats().view) < w", arg=width)


def zoom_onto(page: Page, query: dict, min_px: float = 8) -> dict:
    """Zooms in with W, the pointer on the slice ``query`` finds, until it is ``min_px`` wide."""
    # On a narrow pane a selected slice's details, under the canvas, were scrolled into view.
    page.locator("#panel-timeline canvas").scroll_into_view_if_needed()
    page.locator("#panel-timeline canvas").focus()
    for _ in range(40):
        found = page.evaluate("q => window.playground.timelineLocate(q)", query)
        assert found is not None, query
        if found["right"] - found["left"] >= min_px:
            return found
        page.mouse.move(found["x"], found["y"])
        page.keyboard.press("w")
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    raise AssertionError(f"{query} stayed narrower than {min_px} px: {found}")


# 1. A large trace through the hook ------------------------------------------------------------

def test_a_100000_event_trace_draws_moves_with_the_keys_and_shows_a_slice(page: Page):
    shown = show_synthetic(page)
    assert shown["count"] == 100_000
    assert 0 < shown["firstDrawMs"] < 10_000, shown
    expect(page.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    assert page.evaluate("window.playground.timelineLanes()") == ["Host", *DEVICES]

    # The summary: a real table, one row per device, each named by its lane.
    table = page.locator("#panel-timeline table.tl-summary")
    expect(table.locator("caption")).to_have_text("Per device")
    expect(table.locator("tbody tr")).to_have_count(8)
    assert table.locator("tbody th[scope=row]").all_text_contents() == DEVICES
    assert table.locator("thead th[scope=col]").first.text_content() == "Device"
    expect(page.locator("#panel-timeline table.tl-ops tbody tr").first).to_be_visible()
    # The legend names the kinds the trace has, waits hatched.
    expect(page.locator("#panel-timeline .tl-legend")).to_contain_text("collective")
    expect(page.locator("#panel-timeline .tl-legend .tl-swatch-wait")).to_have_count(1)

    canvas = page.locator("#panel-timeline canvas")
    expect(canvas).to_have_attribute("tabindex", "0")
    expect(canvas).to_have_attribute("aria-label", re.compile(r"W and S zoom in and out, A and D pan"))
    # The canvas's pixels follow devicePixelRatio, and it drew something other than its background.
    size = page.evaluate("""() => { const c = document.querySelector('#panel-timeline canvas');
        const r = c.getBoundingClientRect(); return {w: c.width, css: r.width, dpr: devicePixelRatio}; }""")
    assert abs(size["w"] - round(size["css"] * size["dpr"])) <= 1, size
    whole = view(page)
    assert whole["start"] <= 0 and whole["end"] > 100_000, whole  # the whole 108 ms, in µs

    canvas.focus()
    zoomed = press(page, "w")
    assert span(zoomed) < span(whole) * 0.9, (whole, zoomed)
    # About the middle (the pointer is elsewhere).
    assert abs((zoomed["start"] + zoomed["end"]) - (whole["start"] + whole["end"])) / 2 < span(whole) * 0.01
    out = press(page, "s")
    assert span(out) > span(zoomed) * 1.1, (zoomed, out)
    deep = press(page, "w", 8)
    assert span(deep) < span(whole) / 8, deep
    right = press(page, "d")
    assert right["start"] > deep["start"] and abs(span(right) - span(deep)) < 1e-6 * span(deep), (deep, right)
    left = press(page, "a", 2)
    assert left["start"] < right["start"] and abs(span(left) - span(deep)) < 1e-6 * span(deep), (right, left)
    # The buttons do what W, S and 0 do.
    page.get_by_role("button", name="Zoom out").click()
    wider = view(page)
    assert span(wider) > span(left) * 1.2, (left, wider)
    page.get_by_role("button", name="Zoom in").click()
    narrower_than(page, span(wider) * 0.9)
    canvas.focus()
    fitted = press(page, "0")
    assert fitted == whole, (fitted, whole)

    # The mouse: Ctrl+wheel zooms about the pointer, Shift+wheel pans, a drag pans.
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + 120)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    narrower_than(page, span(whole) * 0.8)
    pinched = view(page)
    page.keyboard.down("Shift")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Shift")
    page.wait_for_function("s => window.playground.timelineStats().view.start > s", arg=pinched["start"])
    shifted = view(page)
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5 + 150, box["y"] + 200, steps=5)
    page.mouse.up()
    dragged = view(page)
    assert dragged["start"] < shifted["start"] and abs(span(dragged) - span(shifted)) < 1e-6 * span(shifted)
    stats = page.evaluate("window.playground.timelineStats()")
    assert stats["frames"] and all(f >= 0 for f in stats["frames"]), stats

    # A click on an op shows it, with its HLO op; none of this run's compilations made it.
    fusion = zoom_onto(page, {"name": "fusion.0", "lane": "TFRT_CPU_3"})
    page.mouse.click(fusion["x"], fusion["y"])
    details = page.locator("#panel-timeline .tl-details")
    expect(details.locator(".tl-details-title")).to_contain_text("fusion.0")
    expect(details).to_contain_text("TFRT_CPU_3 · XLA Ops")
    expect(details).to_contain_text("jit_train_step")
    expect(details).to_contain_text("No compilation of jit_train_step")
    # The arrows step along the row; Escape lets go.
    canvas.focus()
    page.keyboard.press("ArrowRight")
    expect(details.locator(".tl-details-name")).not_to_have_text("fusion.0")
    page.keyboard.press("Escape")
    expect(details).to_contain_text("Click a slice for its details")

    # A collective: its wait, and the same collective on every device, who waited how long.
    reduce = zoom_onto(page, {"name": "all-reduce.1", "lane": "TFRT_CPU_5"}, min_px=30)
    page.mouse.click(reduce["right"] - 3, reduce["y"])
    expect(details.locator(".tl-details-name")).to_have_text("all-reduce.1")
    expect(details).to_contain_text("for its peers")
    peers = details.locator("table.tl-peers tbody tr")
    expect(peers).to_have_count(8)
    assert peers.locator("th").all_text_contents() == DEVICES
    # The hatched part at its start is the wait, inside it (found again: on a pane this narrow the
    # details are under the canvas, and were scrolled into view).
    on_cpu5 = {"name": "all-reduce.1", "lane": "TFRT_CPU_5"}
    reduce = page.evaluate("q => window.playground.timelineLocate(q)", on_cpu5)
    if reduce["y"] < 0:
        page.locator("#panel-timeline canvas").scroll_into_view_if_needed()
        reduce = page.evaluate("q => window.playground.timelineLocate(q)", on_cpu5)
    page.mouse.click(reduce["left"] + 2, reduce["y"])
    expect(details.locator(".tl-details-name")).to_have_text("Rendezvous")
    expect(details).to_contain_text("waiting in")

    assert_accessible(page, "the Timeline tab with a 100,000-event trace and a collective selected")

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator("#panel-timeline").screenshot(path=SHOTS / "timeline-light.png")
    page.screenshot(path=SHOTS / "timeline-page-light.png")

    # A slice of the snippet's Python links to its line in the editor.
    call = zoom_onto(page, {"name": "train_step", "lane": "Host"})
    page.mouse.click(call["x"], call["y"])
    expect(details).to_contain_text("Host · Python")
    details.get_by_role("button", name="Line 9 in the editor").click()
    assert page.evaluate("window.playground.editor.getPosition().lineNumber") == 9


def test_the_timeline_in_the_dark_says_what_was_cut_and_passes_axe(browser: Browser, live_stack):
    context = browser.new_context(base_url=live_stack.url, viewport={"width": 1440, "height": 900},
                                  color_scheme="dark", reduced_motion="reduce")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_playground(page)
        cut = "The trace was cut at 20,000 events (PROFILE_MAX_EVENTS): the last 3 ms are left out."
        show_synthetic(page, events=20_000, event={"cut": cut, "profile_ms": 41.5, "devices": 8,
                                                    "raw_bytes": 3_400_000, "bytes": 410_000})
        expect(page.locator("#panel-timeline .tl-notice").first).to_contain_text(cut)
        expect(page.locator("#panel-timeline .tl-facts")).to_contain_text("profiling cost 41.5 ms")
        # Dark: the axis's and the gutter's background is the dark surface, not white.
        dark = page.evaluate("""() => { const c = document.querySelector('#panel-timeline canvas');
            const [r, g, b] = c.getContext('2d').getImageData(4, 4, 1, 1).data;
            return r + g + b; }""")
        assert dark < 150, dark
        canvas = page.locator("#panel-timeline canvas")
        canvas.focus()
        press(page, "w", 8)
        found = zoom_onto(page, {"name": "all-reduce.2", "lane": "TFRT_CPU_1"}, min_px=30)
        page.mouse.click(found["right"] - 3, found["y"])
        expect(page.locator("#panel-timeline table.tl-peers")).to_be_visible()
        assert_accessible(page, "the Timeline tab, dark")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#panel-timeline").screenshot(path=SHOTS / "timeline-dark.png")
        page.screenshot(path=SHOTS / "timeline-page-dark.png")
        assert errors == []
    finally:
        context.close()


def test_profile_beside_run_is_a_remembered_toggle_that_sends_the_runs_options(browser: Browser, live_stack):
    with fresh_page(browser, live_stack) as (page, requests):
        open_playground(page)
        toggle = page.get_by_role("button", name="Profile")
        expect(toggle).to_have_attribute("aria-pressed", "false")
        # No Timeline tab while nothing is profiled; there as soon as runs are to be.
        expect(page.locator("#tab-timeline")).to_be_hidden()
        expect(toggle).to_have_attribute("title", "Run under jax.profiler and show a timeline per device")
        # Beside Run, and reached with the keyboard: Tab from it lands on Run.
        toggle.focus()
        page.keyboard.press("Enter")
        expect(toggle).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#tab-timeline")).to_be_visible()
        page.keyboard.press("Tab")
        expect(page.locator("#run-button")).to_be_focused()
        open_playground(page, reload=True)
        expect(page.get_by_role("button", name="Profile")).to_have_attribute("aria-pressed", "true")

        set_code(page, "print('profiled')\n")
        page.keyboard.press("Control+Enter")
        wait_until_finished(page)
        started = [json.loads(body) for kind, _, body in requests if kind == "START"]
        posted = [json.loads(body) for kind, path, body in requests if kind == "POST" and path == "/api/runs"]
        sent = (started + posted)[-1]
        assert sent["options"] == {"profile": True}, sent

        page.get_by_role("button", name="Profile").click()
        expect(page.get_by_role("button", name="Profile")).to_have_attribute("aria-pressed", "false")
        page.keyboard.press("Control+Enter")
        wait_until_finished(page)
        started = [json.loads(body) for kind, _, body in requests if kind == "START"]
        posted = [json.loads(body) for kind, path, body in requests if kind == "POST" and path == "/api/runs"]
        assert "options" not in (started + posted)[-1]


# 2. Saved runs: a snippet's page, a comparison ------------------------------------------------

CODE = """\
import jax
x = jax.numpy.ones(8)
print(jax.jit(lambda v: v * 2)(x))
"""
HLO = """\
HloModule jit_train_step, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY %main.1 (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %fusion.0 = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused_computation
  %all-reduce.1 = f32[8]{0} all-reduce(%fusion.0), replica_groups={}, to_apply=%add
  ROOT %copy.2 = f32[8]{0} copy(%all-reduce.1)
}
"""
HLO_LINES = [None, None, None, None, 3, 3, 3, None, None]


def summary_rows(scale: float) -> list[dict]:
    return [{"device": name, "span_us": 100_000.0 * scale, "busy_us": (70_000.0 - i * 1000) * scale,
             "wait_us": (7 - i) * 900.0 * scale,
             "kinds": {"collective": 20_000.0 * scale, "fusion": 12_000.0 * scale, "matmul": 9_000.0 * scale},
             "ops": [["all-reduce.1", "collective", 490, 10_000.0 * scale],
                     ["fusion.0", "fusion", 490, 2_000.0 * scale]]}
            for i, name in enumerate(DEVICES)]


def profiled_run(runtime: str, scale: float, *, cut: str = "", error: str = ""):
    """A finished run of CODE, stored as the stack would store it, with a profile event."""
    from django.utils import timezone

    from playground.models import Run, RunEvent

    now = timezone.now()
    run = Run.objects.create(code=CODE, device="cpu", runtime=runtime, status="succeeded", options={"profile": True},
                             started_at=now, finished_at=now, wall_ms=900.0 * scale)
    events = [
        {"type": "started", "device": "cpu", "platform": "cpu", "device_count": 8, "jax_version": "0.12.0.1"},
        {"type": "stdout", "text": "[2. 2. 2. 2. 2. 2. 2. 2.]\n"},
        {"type": "compiled", "name": "train_step", "module": "jit_train_step", "via": "jit", "line": 3,
         "hlo": HLO, "hlo_lines": HLO_LINES, "compile_ms": 12.0},
        {"type": "profile", "url": None if error else f"/api/runs/{run.id}/profile", "bytes": 410_000,
         "raw_bytes": 3_100_000, "events": 4000, "lanes": ["Host", *DEVICES], "devices": 8,
         "summary": [] if error else summary_rows(scale), "cut": cut, "profile_ms": 38.0, "error": error},
        {"type": "finished", "status": "succeeded", "wall_ms": 900.0 * scale},
    ]
    for seq, event in enumerate(events, 1):
        RunEvent.objects.create(run=run, seq=seq, type=event["type"], data={"seq": seq, **event})
    return run


def serve_traces(page: Page, traces: dict[str, dict]) -> list[str]:
    """Answers GET /api/runs/<id>/profile with the trace given for that run; the paths asked."""
    asked: list[str] = []

    def answer(route):
        run_id = route.request.url.rstrip("/").split("/")[-2]
        asked.append(route.request.url)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(traces[run_id]))

    page.route(re.compile(r".*/api/runs/[0-9a-f-]+/profile$"), answer)
    return asked


def snippet_of(run):
    from snippets.models import Snippet

    slug = secrets.token_hex(5)
    return Snippet.objects.create(slug=slug, content_hash=hashlib.sha256(slug.encode()).hexdigest(), code=CODE,
                                  title="A profiled run", device="cpu", runtime=run.runtime, run=run)


def test_a_snippets_saved_profile_links_its_device_ops_to_their_hlo_line(page: Page):
    run = profiled_run(runtimes.FIRST, 1.0)
    failed = profiled_run(runtimes.FIRST, 1.0, error="the profiler could not start: another one is running")
    trace = synthetic_trace(page, 4000)
    asked = serve_traces(page, {str(run.id): trace})

    open_playground(page, path=f"/s/{snippet_of(run).slug}")
    expect(page.locator("#tab-timeline .tab-count")).to_have_text("1")
    page.locator("#tab-timeline").click()
    # The summary is the event's, at once; the trace is fetched when the tab is shown.
    table = page.locator("#panel-timeline table.tl-summary")
    expect(table.locator("tbody tr")).to_have_count(8)
    page.wait_for_function("() => window.playground.timelineLanes().length === 9")
    assert len(asked) == 1 and asked[0].endswith(f"/api/runs/{run.id}/profile")
    expect(page.locator("#panel-timeline .tl-facts")).to_contain_text("8 devices")

    found = zoom_onto(page, {"name": "fusion.0", "lane": "TFRT_CPU_2"})
    page.mouse.click(found["x"], found["y"])
    details = page.locator("#panel-timeline .tl-details")
    expect(details).to_contain_text("HLO line")
    show = details.get_by_role("button", name="Show in Compiled")
    expect(show).to_be_visible()
    show.click()
    expect(page.locator("#tab-compiled")).to_have_attribute("aria-selected", "true")
    page.wait_for_function("() => window.playground.compiledMarkedLine() === 5")
    text = page.evaluate("window.playground.compiledText()")
    assert text.splitlines()[4].strip().startswith("%fusion.0 = "), text
    expect(page.locator("#panel-compiled .marked-line")).to_have_count(1)
    # And from the timeline to the snippet's line (the HLO line's source).
    page.locator("#tab-timeline").click()
    details.get_by_role("button", name="Line 3 in the editor").click()
    assert page.evaluate("window.playground.editor.getPosition().lineNumber") == 3

    # A run whose profiling failed says why, and draws nothing.
    open_playground(page, path=f"/s/{snippet_of(failed).slug}")
    page.locator("#tab-timeline").click()
    expect(page.locator("#panel-timeline [role=alert]")).to_have_text(
        "Profiling failed: the profiler could not start: another one is running")
    expect(page.locator("#panel-timeline canvas")).to_be_hidden()
    assert len(asked) == 1


def test_a_comparison_shows_both_timelines_on_one_scale_and_their_op_kinds(browser: Browser, live_stack):
    from snippets.actions import do_create_comparison

    a = profiled_run(runtimes.FIRST, 1.0)
    b = profiled_run(OLD_RUNTIME, 1.5, cut="The trace was cut at 3,000 events.")
    comparison = do_create_comparison(code=CODE, title="", a=a, b=b, snippet=None, owner=None)
    with fresh_page(browser, live_stack, viewport={"width": 1440, "height": 1000}) as (page, _):
        page.goto("/")
        traces = {str(a.id): synthetic_trace(page, 4000), str(b.id): synthetic_trace(page, 3000)}
        asked = serve_traces(page, traces)
        page.goto(f"/compare/{comparison.slug}")
        page.wait_for_function("() => window.playground && window.playground.statuses().every(s => s)")
        expect(page.locator("#tab-timeline .tab-count")).to_have_text("2")
        page.locator("#tab-timeline").click()
        page.wait_for_function("() => window.playground.timelines().lanes.every(l => l.length === 9)")
        assert len(asked) == 2
        canvases = page.locator("#panel-timeline canvas")
        expect(canvases).to_have_count(2)
        a_box, b_box = canvases.nth(0).bounding_box(), canvases.nth(1).bounding_box()
        assert b_box["y"] > a_box["y"] + a_box["height"] - 1, (a_box, b_box)  # one above the other
        expect(page.locator("#panel-timeline .tl-notice")).to_contain_text("The trace was cut at 3,000 events.")

        described = page.evaluate("window.playground.timelines()")
        assert described["shared"] is True
        kinds = {row["kind"]: row for row in described["kinds"]}
        assert kinds["collective"]["a"] == pytest.approx(160_000) and kinds["collective"]["b"] == pytest.approx(240_000)
        assert kinds["collective"]["ratio"] == "1.50×"
        assert {"fusion", "matmul", "busy, all devices", "collective wait"} <= kinds.keys()
        table = page.locator("#panel-timeline table.tl-kinds")
        expect(table.locator("tbody tr")).to_have_count(len(described["kinds"]))
        expect(table.locator("thead th").last).to_have_text("B/A")

        # One scale: both start fitted to the longer run; zooming A moves B the same way.
        views = page.evaluate("window.playground.timelineViews()")
        assert views[0] == views[1], views
        canvases.nth(0).focus()
        page.keyboard.press("w")
        page.keyboard.press("d")
        page.wait_for_function("() => (v => v[0].start > 0 && v[0].start === v[1].start && v[0].end === v[1].end)"
                               "(window.playground.timelineViews())")
        # Each its own when the box is unticked.
        page.get_by_label("One time scale for both").uncheck()
        canvases.nth(1).focus()
        page.keyboard.press("w")
        page.wait_for_function("() => (v => v[0].end - v[0].start !== v[1].end - v[1].start)"
                               "(window.playground.timelineViews())")

        # Ticked again, both fit the longer run; a slice of B, selected (the host's first row):
        # its details name the side.
        page.get_by_label("One time scale for both").check()
        views = page.evaluate("window.playground.timelineViews()")
        assert views[0] == views[1] and views[0]["start"] == 0, views
        canvases.nth(1).focus()
        page.keyboard.press("0")
        assert page.evaluate("window.playground.timelineViews()") == views
        box = canvases.nth(1).bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.6, box["y"] + 36)
        expect(page.locator("#panel-timeline .tl-details .side-name")).to_have_text("B")
        expect(page.locator("#panel-timeline .tl-details")).to_contain_text("Host · Python")

        assert_accessible(page, "a comparison's Timeline tab")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#panel-timeline .compare-timelines").evaluate("e => e.scrollTo(0, 0)")
        page.screenshot(path=SHOTS / "compare-timeline.png")
        page.locator("#panel-timeline .tl-table").evaluate("e => e.scrollIntoView()")
        page.screenshot(path=SHOTS / "compare-timeline-table.png")


# 3. End to end: a pmap run with Profile on ----------------------------------------------------

PMAP = """\
import jax
import jax.numpy as jnp

f = jax.pmap(lambda x: jax.lax.psum(jnp.sin(x) * 2.0 + 1.0, "i"), axis_name="i")
x = jnp.arange(jax.device_count() * 64.0).reshape(jax.device_count(), 64)
for _ in range(5):
    y = f(x).block_until_ready()
print(jax.device_count(), float(y[0, 0]))
"""


def test_a_pmap_run_with_profile_on_shows_8_device_lanes_linked_to_compiled(page: Page):
    page.get_by_role("button", name="Profile").click()
    expect(page.get_by_role("button", name="Profile")).to_have_attribute("aria-pressed", "true")
    set_code(page, PMAP)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded", page.locator("#output").text_content()
    expect(page.locator("#output")).to_contain_text("8 ")
    expect(page.locator("#tab-timeline .tab-count")).to_have_text("1")
    page.locator("#tab-timeline").click()
    page.wait_for_function("() => window.playground.timelineLanes().length > 1", timeout=30_000)
    lanes = page.evaluate("window.playground.timelineLanes()")
    assert [name for name in lanes if name.startswith("TFRT_CPU_")] == DEVICES, lanes
    assert lanes.index("TFRT_CPU_0") > 0  # the host's lane first
    table = page.locator("#panel-timeline table.tl-summary")
    expect(table.locator("tbody tr")).to_have_count(8)
    assert table.locator("tbody th[scope=row]").all_text_contents() == DEVICES

    # A device op of the pmapped function: Show in Compiled goes to its line of optimised HLO.
    page.locator("#panel-timeline canvas").focus()
    # An op of the pmapped function (JAX's own, such as y[0, 0]'s gather, are not in Compiled)
    # with no wait inside it (a collective's are slices of their own).
    # Waited for: the chart measures its width in an animation frame, which a loaded machine delays.
    kinds = ["fusion", "matmul", "elementwise", "reduce", "copy", "other", "collective"]
    query = page.wait_for_function(
        """kinds => kinds.map(kind => ({lane: "TFRT_CPU_0", compiled: true, kind}))
                         .find(q => window.playground.timelineLocate(q)) || null""",
        arg=kinds, timeout=15_000).json_value()  # times out: no such op in view
    found = zoom_onto(page, query, min_px=10)
    page.mouse.click(found["x"], found["y"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "timeline-pmap-run.png")
    details = page.locator("#panel-timeline .tl-details")
    expect(details).to_contain_text("HLO op")
    op = details.locator("dt", has_text="HLO op").locator("xpath=following-sibling::dd[1]/span/code").text_content()
    details.get_by_role("button", name="Show in Compiled").click()
    expect(page.locator("#tab-compiled")).to_have_attribute("aria-selected", "true")
    page.wait_for_function("() => window.playground.compiledMarkedLine() > 0")
    line = page.evaluate("window.playground.compiledMarkedLine()")
    text = page.evaluate("window.playground.compiledText()")
    assert text.startswith("HloModule ")
    marked = text.splitlines()[line - 1]
    assert re.match(rf"\s*(ROOT\s+)?%?{re.escape(op)}\s*=", marked), (op, marked)
    expect(page.locator("#panel-compiled .marked-line")).to_have_count(1)
    page.screenshot(path=SHOTS / "timeline-pmap-show-in-compiled.png")


# 4. A notebook's cell ---------------------------------------------------------------------------

def test_a_notebook_cell_run_with_profile_on_has_a_timeline_tab(browser: Browser, live_stack):
    from .test_notebook import cell, edit, new_page, open_notebook, wait_finished

    page = new_page(browser, live_stack)
    try:
        open_notebook(page)
        edit(page, 0, "import jax\nprint(jax.jit(lambda x: x * 2.0)(jax.numpy.arange(8.0)))\n")
        page.keyboard.press("Shift+Enter")
        assert wait_finished(page, 0) == "succeeded"
        # Not profiled: no Timeline among the cell's tabs.
        expect(cell(page, 0).locator(".tab[data-pane=timeline]")).to_be_hidden()

        page.get_by_role("button", name="Profile").click()
        expect(page.get_by_role("button", name="Profile")).to_have_attribute("aria-pressed", "true")
        previous = page.evaluate("window.notebook.runId(0)")
        cell(page, 0).locator(".cell-editor .view-lines").click()
        page.keyboard.press("Shift+Enter")
        assert wait_finished(page, 0, previous) == "succeeded"
        tab = cell(page, 0).locator(".tab[data-pane=timeline]")
        expect(tab).to_be_visible()
        tab.click()
        panel = cell(page, 0).locator(".cell-panel[data-pane=timeline]")
        expect(panel.locator("canvas")).to_be_visible()
        expect(panel.locator("table.tl-summary tbody tr").first).to_be_visible()
        # The trace came and is drawn: the line above it says how long it is, the legend its kinds.
        expect(panel.locator(".tl-facts")).to_contain_text(re.compile(r"\d+(\.\d+)? (µs|ms|s) traced"))
        expect(panel.locator(".tl-legend li").first).to_be_visible()
        assert_accessible(page, "a notebook cell's Timeline tab")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SHOTS / "notebook-timeline.png")
        assert page.errors == []
    finally:
        page.context.close()


def test_on_a_phone_the_tabs_out_of_view_are_seen_at_a_faded_edge(browser: Browser, live_stack):
    """At 390 px in English, Timeline (shown once Profile is on) does not fit beside the other
    tabs: the bar scrolls sideways with no scroll bar drawn, so its edge fades where tabs are out
    of view, and the next tab shows there in part."""
    with fresh_page(browser, live_stack, viewport={"width": 390, "height": 844}, locale="en-US") as (page, _):
        open_playground(page)
        bar = page.locator("#tabs")
        expect(bar).to_have_attribute("data-more", "none")
        page.get_by_role("button", name="Profile").click()
        expect(page.locator("#tab-timeline")).to_be_attached()
        expect(bar).to_have_attribute("data-more", "end")
        edge = bar.bounding_box()
        timeline = page.locator("#tab-timeline").bounding_box()
        assert timeline["x"] < edge["x"] + edge["width"] - 20, (timeline, edge)  # in part in view
        bar.evaluate("b => b.scrollTo({left: b.scrollWidth})")
        expect(bar).to_have_attribute("data-more", "start")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SHOTS / "tabs-phone-scrolled.png")
