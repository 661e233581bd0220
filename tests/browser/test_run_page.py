"""The playground page in a real Chromium against the whole stack (daphne, recorder, a CPU
executor, Redis): what a person sees when they write code and run it.

The page is built from frontend/ (`npm ci && npm run build`); these tests fail, rather than
skip, when frontend/dist is missing, because then the page is broken.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import (
    RUN_TIMEOUT_MS,
    SCREENS,
    assert_accessible,
    open_playground,
    output,
    run_status,
    set_code,
    wait_until_finished,
)

# The stack behind the page writes to the test database, which pytest-django only creates when a
# collected test asks for it. transaction=True: a transaction held open by the test process would
# lock SQLite against the stack's own writers.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STREAMING = "import time\nfor i in range(5):\n    print('line', i, flush=True)\n    time.sleep(0.3)\n"
FAILING = "x = 1\nraise ValueError('boom')\n"
LINES = [f"line {i}" for i in range(5)]


def test_it_lists_the_online_devices(page: Page):
    label = page.locator("#device-select option:checked").inner_text()
    # The JAX is the version picker's to say, beside it.
    assert re.fullmatch(r"CPU · \d+ devices?", label), label
    assert page.locator("#runtime-select option:checked").inner_text() == "JAX 0.12.0.1"
    assert page.locator("#device-select option[value=gpu]").is_disabled()


def test_it_offers_the_specific_device_kinds_online_under_their_kind(page: Page):
    """A GPU kind with H200 workers online (the answer rewritten: the suite has no GPU): the
    picker offers "GPU" and "GPU: NVIDIA H200", and a run asks for what was chosen."""
    def with_h200(route):
        listed = route.fetch().json()
        for device in listed["devices"]:
            if device["kind"] == "gpu":
                device.update(online=True, workers=2, slots=2, busy=1, free_runners=1, device_count=1,
                              device_kind="NVIDIA H200", jax_version="0.12.0.1", specific=[
                                  {"device": "gpu:h200", "workers": 2, "slots": 2, "busy": 1, "free_runners": 1,
                                   "queue_depth": 3, "device_kind": "NVIDIA H200", "device_count": 1}])
        route.fulfill(json=listed)

    page.route("**/api/devices", with_h200)
    page.reload()
    picker = page.locator("#device-select")
    expect(picker.locator("option[value='gpu:h200']")).to_have_text("GPU: NVIDIA H200 · 1 free · 3 queued")
    assert picker.locator("option[value=gpu]").inner_text() == "GPU · 1 × NVIDIA H200"
    assert picker.locator("option[value='cpu:cpu']").count() == 0  # a CPU is not offered twice
    picker.select_option("gpu:h200")
    assert_accessible(page, "a specific device kind chosen")
    page.locator("#run-button:visible").click()
    # The server has no such worker: the request named it, and the answer says so.
    expect(page.locator("#run-message")).to_contain_text("no gpu:h200 executor is online", timeout=10_000)


def test_it_warns_when_runs_are_not_sandboxed_and_only_then(page: Page):
    devices = page.request.get("/api/devices").json()["devices"]
    unsandboxed = any(d["online"] and d.get("sandboxed") is False for d in devices)
    banner = page.get_by_text("Runs are NOT sandboxed on this server (development mode)")
    expect(banner).to_have_count(1 if unsandboxed else 0)
    if unsandboxed:
        expect(banner).to_be_visible()


def test_it_streams_output_while_the_run_is_running(page: Page):
    set_code(page, STREAMING)
    page.keyboard.press("Control+Enter")

    # Take the page's state in one go the moment the first line shows: output and status
    # together, so the check cannot be fooled by the run finishing between two reads.
    first = page.wait_for_function(
        """() => {
            const out = document.querySelector('#output').textContent;
            if (!out.includes('line 0')) return null;
            return {out, status: document.querySelector('#run-status').dataset.status,
                    clock: document.querySelector('#wall-time').textContent};
        }""",
        timeout=RUN_TIMEOUT_MS,
        polling="raf",
    ).json_value()
    assert first["status"] == "running"
    assert "line 4" not in first["out"]
    # While it runs, a clock shows how long it has been going, and it moves.
    assert re.fullmatch(r"\d+\.\d s", first["clock"]), first["clock"]
    page.wait_for_function(
        "(before) => parseFloat(document.querySelector('#wall-time').textContent) > before",
        arg=float(first["clock"].split()[0]) + 0.25, timeout=5000,
    )

    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "".join(f"{line}\n" for line in LINES)
    assert re.fullmatch(r"\d+(\.\d+)? (ms|s)", page.inner_text("#wall-time"))
    expect(page.locator("#error-box")).to_be_hidden()
    expect(page.locator("#cancel-button")).to_be_hidden()
    expect(page.locator("#run-button")).to_be_enabled()


def test_it_runs_what_was_typed_into_the_editor_with_ctrl_enter(page: Page):
    page.click("#editor .view-lines")
    page.keyboard.press("Control+A")
    page.keyboard.type("x = 6 * 7\nprint('answer', x)")
    assert page.evaluate("window.playground.getCode()") == "x = 6 * 7\nprint('answer', x)"

    page.keyboard.press("Control+Enter")  # Monaco's own keybinding: the focus is in the editor

    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "answer 42\n"


def test_it_shows_an_error_with_its_line_and_marks_the_editor(page: Page):
    set_code(page, FAILING)
    page.click("#run-button")

    assert wait_until_finished(page) == "failed"
    box = page.locator("#error-box")
    expect(box).to_be_visible()
    expect(box.locator(".error-title")).to_have_text("ValueError: boom")
    expect(box).to_contain_text("line 2")
    markers = page.evaluate("window.playground.markers()")
    assert [(m["line"], m["severity"]) for m in markers] == [(2, "Error")]
    assert "boom" in markers[0]["message"]
    expect(page.locator("#editor .editor-error-glyph")).to_have_count(1)

    # The next run starts clean: no box, no marker.
    set_code(page, "print('fixed')\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    expect(box).to_be_hidden()
    assert page.evaluate("window.playground.markers()") == []
    expect(page.locator("#editor .editor-error-glyph")).to_have_count(0)


def test_it_shows_the_whole_run_exactly_once_after_a_reload_mid_run(page: Page):
    set_code(page, STREAMING)
    page.keyboard.press("Control+Enter")
    expect(page.locator("#output")).to_contain_text("line 1", timeout=RUN_TIMEOUT_MS)
    assert run_status(page) == "running"

    open_playground(page, reload=True)
    # The replayed run's clock counts from when it started, not from the reload: once line 1
    # (printed 0.3 s in) is replayed, it shows at least that (unless the run ended meanwhile).
    clock = page.wait_for_function(
        "() => { const status = document.querySelector('#run-status').dataset.status;"
        " const t = document.querySelector('#wall-time').textContent;"
        " const replayed = document.querySelector('#output').textContent.includes('line 1');"
        " return status === 'running' ? (replayed && t) : (status === 'queued' || !status ? null : 'ended'); }",
        timeout=RUN_TIMEOUT_MS,
    ).json_value()
    assert clock == "ended" or float(clock.split()[0]) >= 0.3, clock
    assert wait_until_finished(page) == "succeeded"
    text = output(page)
    assert [text.count(f"{line}\n") for line in LINES] == [1] * 5, text
    assert text == "".join(f"{line}\n" for line in LINES)

    # And a finished run is still there after another reload.
    open_playground(page, reload=True)
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == text
    assert page.inner_text("#wall-time") != ""


def test_after_a_reload_during_a_quiet_stretch_the_clock_shows_the_run_s_real_age(page: Page):
    set_code(page, "import time\nprint('go', flush=True)\ntime.sleep(15)\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#output")).to_contain_text("go", timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(6000)  # nothing printed meanwhile: no event says the run got older

    open_playground(page, reload=True)
    # At once, not after counting up from the replay: a clock that started at the reload
    # would need 5.8 s to get there (allowed here: 4 s, for a loaded machine's reload and
    # replay, which can take a few seconds).
    clock = page.wait_for_function(
        "() => document.querySelector('#run-status').dataset.status === 'running'"
        " && parseFloat(document.querySelector('#wall-time').textContent) >= 5.8"
        " && document.querySelector('#wall-time').textContent",
        timeout=4000,
    ).json_value()
    assert float(clock.split()[0]) < 15, clock
    page.click("#cancel-button")
    assert wait_until_finished(page) == "cancelled"


def test_it_reconnects_after_a_dropped_socket_without_losing_or_repeating_output(page: Page):
    """The socket drops mid-run; on the next connection the "server" first repeats two events
    the page already has (as an overlapping replay would). The page must reconnect from the
    last seq it saw and show every line exactly once."""
    urls: list[str] = []
    seen: list[str] = []

    def relay(ws):
        urls.append(ws.url)
        server = ws.connect_to_server()
        first_connection = len(urls) == 1
        if not first_connection:
            for message in seen[-2:]:
                ws.send(message)

        def from_server(message):
            ws.send(message)
            seen.append(message)
            if first_connection and '"line 1' in message:
                ws.close(code=1012, reason="test: the server restarts")
                server.close()

        server.on_message(from_server)

    page.route_web_socket(re.compile(r"/ws/runs/"), relay)
    page.reload()  # the socket the run starts on goes through the relay too
    set_code(page, STREAMING)
    page.keyboard.press("Control+Enter")

    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "".join(f"{line}\n" for line in LINES)
    assert len(urls) >= 2, urls
    assert urls[0].endswith("/ws/runs/new/")  # started on the socket the page kept open
    dropped_after = next(json.loads(m)["seq"] for m in seen if '"line 1' in m)
    assert urls[1].endswith(f"?after={dropped_after}")


def test_it_cancels_a_running_run(page: Page):
    set_code(page, "import time\nprint('started', flush=True)\ntime.sleep(25)\nprint('not reached')\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#output")).to_contain_text("started", timeout=RUN_TIMEOUT_MS)

    page.click("#cancel-button")

    assert wait_until_finished(page) == "cancelled"
    expect(page.locator("#run-status")).to_have_text("cancelled")
    assert "not reached" not in output(page)
    expect(page.locator("#cancel-button")).to_be_hidden()


def test_the_keyboard_is_never_trapped_in_the_editor(page: Page):
    page.click("#editor .view-lines")
    expect(page.locator(".panel-editor")).to_have_css("outline-style", "solid")  # a visible focus ring
    page.keyboard.press("Escape")  # out of the editor, on to the next control
    assert page.evaluate("document.getElementById('editor').contains(document.activeElement)") is False
    expect(page.locator(".panel-editor")).to_have_css("outline-style", "none")
    # on a control of the page (the splitter beside the editor, a button), not lost on the body
    assert page.evaluate("document.activeElement !== document.body && document.activeElement.tabIndex >= 0")

    # Ctrl+M: Tab moves focus instead of indenting (and Ctrl+M again gives it back).
    page.click("#editor .view-lines")
    before = page.evaluate("window.playground.getCode()")
    page.keyboard.press("Control+m")
    page.keyboard.press("Tab")
    assert page.evaluate("document.getElementById('editor').contains(document.activeElement)") is False
    assert page.evaluate("window.playground.getCode()") == before  # nothing was indented
    page.click("#editor .view-lines")
    page.keyboard.press("Control+m")


def test_an_error_marks_the_output_tab_and_the_failed_run_ends_on_it(page: Page):
    page.click("#tab-timing")
    set_code(page, FAILING)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "failed"
    tab = page.locator("#tab-output")
    expect(tab).to_have_attribute("data-alert", "true")
    expect(tab).to_have_accessible_name(re.compile(r"Output.*\(error\)"))
    # The run ended badly: the error is shown where it is whole (test_first_use.py).
    expect(tab).to_have_attribute("aria-selected", "true")

    set_code(page, "print('fine')\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    expect(tab).not_to_have_attribute("data-alert", "true")


def test_it_copies_the_output(page: Page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    expect(page.locator("#copy-output")).to_be_hidden()  # nothing to copy yet
    set_code(page, "print('first line')\nprint('second line')\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    page.click("#copy-output")
    expect(page.locator("#copy-output")).to_contain_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == "first line\nsecond line\n"


def test_the_code_s_font_size_changes_with_ctrl_plus_and_minus_and_is_remembered(page: Page):
    def sizes():
        return page.evaluate("""() => [
            getComputedStyle(document.querySelector('#editor .view-lines')).fontSize,
            getComputedStyle(document.querySelector('#output')).fontSize]""")

    assert sizes() == ["14px", "13px"]
    page.click("#editor .view-lines")
    page.keyboard.press("Control+Equal")
    page.keyboard.press("Control+Equal")
    assert sizes() == ["16px", "15px"]
    open_playground(page, reload=True)
    assert sizes() == ["16px", "15px"]  # remembered
    page.click("#editor .view-lines")
    page.keyboard.press("Control+Minus")
    assert sizes() == ["15px", "14px"]
    page.keyboard.press("Control+0")
    assert sizes() == ["14px", "13px"]


def test_it_downloads_the_code_as_a_python_file(page: Page, tmp_path):
    set_code(page, "print('download me')\n")
    with page.expect_download() as info:
        page.click("#download-code")
    download = info.value
    assert download.suggested_filename == "snippet.py"
    target = tmp_path / "snippet.py"
    download.save_as(target)
    assert target.read_text() == "print('download me')\n"


def test_on_a_phone_the_compiled_pane_shows_its_code(page: Page):
    page.set_viewport_size({"width": 390, "height": 844})
    set_code(page, "import jax\nf = jax.jit(lambda x: x * 2)\nprint(f(1.0))\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    page.click("#tab-compiled")
    viewer = page.locator("#panel-compiled .code-view-host").first
    expect(viewer.locator(".view-lines")).to_contain_text("lambda")
    assert viewer.bounding_box()["height"] >= 200  # stacked panes leave the viewer room (was 5 px)


def test_a_text_table_printed_to_output_scrolls_instead_of_wrapping_when_wrap_is_off(page: Page):
    page.set_viewport_size({"width": 1024, "height": 768})
    row = "| " + " | ".join(f"column {i:02d}" for i in range(14)) + " |"
    set_code(page, f"for _ in range(3):\n    print({row!r})\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    page.click("#wrap-output")  # lines wrap unless the person keeps them as printed
    sizes = page.evaluate("""() => { const o = document.querySelector('#output');
        return {scroll: o.scrollWidth, client: o.clientWidth,
                lines: o.getClientRects()[0].height / parseFloat(getComputedStyle(o).lineHeight)}; }""")
    assert sizes["scroll"] > sizes["client"]  # wider than the pane: it scrolls
    assert round(sizes["lines"]) == 3  # three rows, none wrapped


def test_at_1024_px_the_timing_table_scrolls_to_its_last_column(page: Page):
    page.set_viewport_size({"width": 1024, "height": 768})
    set_code(page, "import jax, numpy as np, jaxplay\n"
                   "f = lambda x: x + x * x\n"
                   "jaxplay.compare({'numpy': f, 'jit': jax.jit(f)}, np.ones((200, 200), np.float32))\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    page.click("#tab-timing")
    scroller = page.locator("#panel-timing .table-scroll").first
    expect(scroller).to_be_visible()
    page.evaluate("el => el.scrollLeft = el.scrollWidth", scroller.element_handle())
    last = scroller.locator("thead th").last
    box, frame = last.bounding_box(), scroller.bounding_box()
    assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1  # reachable, not cut off


def test_carriage_returns_rewrite_the_line_as_in_a_terminal(page: Page):
    # A progress line rewritten in place, pieces that split "\r\n" and "\r" across events
    # (flushes 0.2 s apart arrive as separate events), and Windows newlines.
    set_code(page, "import time\n"
                   "for i in range(3):\n"
                   "    print(f'progress {i}/3', end='\\r', flush=True)\n"
                   "    time.sleep(0.2)\n"
                   "print('done   ')\n"
                   "print('a', end='\\r', flush=True)\n"
                   "time.sleep(0.2)\n"
                   "print('\\nb\\r\\nc')\n")
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "done   \na\nb\nc\n"


def test_it_shows_the_servers_message_when_a_run_is_refused(page: Page, live_stack):
    code = "x = 1\n" + "#" * (64 * 1024) + "\n"
    refused, _ = live_stack.start_on_socket({"code": code})  # what the server answers this code
    assert (refused["type"], refused["status"]) == ("refused", 400), refused
    set_code(page, code)
    page.click("#run-button")

    expect(page.locator("#run-message")).to_have_text(refused["error"])
    expect(page.locator("#run-status")).to_be_hidden()
    expect(page.locator("#run-button")).to_be_enabled()
    # The socket stays for the next run, which starts on it.
    set_code(page, "print('after the refusal')\n")
    page.click("#run-button")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "after the refusal\n"


def test_runs_start_on_a_socket_kept_open_and_the_post_is_the_fallback(page: Page):
    """Run sends the code on the socket the page opened ahead (no POST, no handshake after the
    press); once the run has ended a new socket waits for the next. With no socket open (it was
    closed), Run posts as before."""
    posts: list[str] = []
    sockets: list[str] = []
    starts: list[dict] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/api/runs") else None)

    def watch(ws):
        sockets.append(ws.url)
        ws.on("framesent", lambda payload: starts.append(json.loads(payload)) if '"op"' in str(payload) else None)

    page.on("websocket", watch)
    page.reload()
    for n in (1, 2):
        set_code(page, f"print('run {n}')\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"
        assert output(page) == f"run {n}\n"
    assert posts == []
    assert [s["code"] for s in starts] == ["print('run 1')\n", "print('run 2')\n"]
    assert all(s["op"] == "start" and s["device"] == "cpu" for s in starts), starts
    # One socket per run, each opened before its run; another waits now.
    page.wait_for_timeout(300)
    assert [u.rsplit("/ws/", 1)[1] for u in sockets] == ["runs/new/"] * 3, sockets

    page.route_web_socket(re.compile(r"/ws/runs/new/"), lambda ws: ws.close(code=1011))
    page.reload()  # its run socket is refused now: Run posts
    page.wait_for_timeout(300)
    set_code(page, "print('posted')\n")
    page.keyboard.press("Control+Enter")
    # The page shows the last run (run 2, succeeded) until the posted one has started: wait for
    # the new run's output, not for a terminal status the old one already has.
    page.wait_for_function("() => document.querySelector('#output').textContent === 'posted\\n'",
                           timeout=RUN_TIMEOUT_MS)
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == "posted\n"
    assert len(posts) == 1


def test_it_keeps_the_editor_content_across_reloads(page: Page):
    set_code(page, "print('kept across reloads')\n")
    open_playground(page, reload=True)
    assert page.evaluate("window.playground.getCode()") == "print('kept across reloads')\n"


def test_it_switches_between_light_and_dark_and_remembers(page: Page):
    html = page.locator("html")
    monaco = page.locator("#editor .monaco-editor")
    expect(html).to_have_attribute("data-theme", "light")  # the context prefers light
    expect(monaco).not_to_have_class(re.compile(r"\bvs-dark\b"))
    light_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")

    page.click("#theme-toggle")

    expect(html).to_have_attribute("data-theme", "dark")
    expect(monaco).to_have_class(re.compile(r"\bvs-dark\b"))
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != light_bg

    open_playground(page, reload=True)
    expect(html).to_have_attribute("data-theme", "dark")
    expect(monaco).to_have_class(re.compile(r"\bvs-dark\b"))


def test_it_follows_the_system_theme_until_one_is_chosen(browser: Browser, live_stack):
    context = browser.new_context(base_url=live_stack.url, color_scheme="dark")
    try:
        page = context.new_page()
        open_playground(page)
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        expect(page.locator("#editor .monaco-editor")).to_have_class(re.compile(r"\bvs-dark\b"))
    finally:
        context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_it_lays_out_cleanly_after_a_run(browser: Browser, live_stack, theme: str):
    """Screenshots for a person to look at (in /tmp/screens), and the layout checks a
    screenshot would show: nothing overflows sideways, wide or narrow."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        base_url=live_stack.url, viewport={"width": 1280, "height": 800}, color_scheme=theme
    )
    try:
        page = context.new_page()
        open_playground(page)
        set_code(page, "import jax.numpy as jnp\nprint(jnp.arange(6).reshape(2, 3))\n"
                       "print('to stderr', file=__import__('sys').stderr)\n1 / 0\n")
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "failed"
        page.locator("#error-box summary").click()
        page.screenshot(path=SCREENS / f"run-{theme}.png")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        editor, results = page.locator("#editor").bounding_box(), page.locator("#output").bounding_box()
        assert editor["x"] + editor["width"] <= results["x"], "side by side at 1280 px"

        page.set_viewport_size({"width": 600, "height": 900})
        # Monaco lays itself out on the next frame after its container resizes.
        page.wait_for_function(
            "() => document.querySelector('#editor .monaco-editor').offsetWidth"
            " === document.querySelector('#editor').offsetWidth"
        )
        page.screenshot(path=SCREENS / f"narrow-{theme}.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        editor, results = page.locator("#editor").bounding_box(), page.locator("#output").bounding_box()
        assert editor["y"] + editor["height"] <= results["y"], "stacked on a narrow window"
    finally:
        context.close()
