"""What a learner meets first, at 1440 and 390 px, in English and in Chinese, checked with axe
and kept as screenshots: the Timeline opens on the devices' steps (the host's Python and compile
washed out, the whole trace one key away), its keys work without a click, a clicked slice's
details are in view, simulated devices are named as such and every lane, row and op kind says
what it is; the top bar names its buttons from 1280 px up, Profile's on state shows, and on a
phone the JAX version and Compare are in the More menu; long lines wrap by choice, remembered;
the examples open in the page's language; and a run that compiled nothing says so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, expect

from bench.profile_page import SYNTHETIC_TRACE_JS
from playground.gallery import examples

from .playground import SCREENS, assert_accessible, open_playground, playground_in, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"wide": (1440, 900), "phone": (390, 844)}
LOCALES = {"en": "en-US", "zh": "zh-CN"}


@contextmanager
def fresh(browser: Browser, live_stack, size: str, language: str) -> Iterator[Page]:
    """A fresh profile on the playground at ``size`` in ``language``; closed after, failing the
    test on any uncaught script error."""
    width, height = SIZES[size]
    with playground_in(browser, live_stack, LOCALES[language], height=height, width=width,
                       reduced_motion="reduce") as page:
        yield page


def shoot(page: Page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}.png"))


# A profile like the gallery's shard_map example's: the host's Python and XLA's compile take most
# of the trace (2.7 s of it) before the 8 simulated devices' steps, a strip at its end.
PROFILE_JS = """async ({generator}) => {
  const trace = eval(generator)({events: 20000, devices: 8});
  const steps = trace.traceEvents.filter((e) => e.ph === "X" && e.pid !== 1);
  const first = Math.min(...steps.map((e) => e.ts));
  const last = Math.max(...steps.map((e) => e.ts + e.dur));
  const before = 2700000;
  for (const e of trace.traceEvents) if (e.ph === "X") e.ts += before;
  trace.traceEvents.push(
    {ph: "X", pid: 1, tid: 1, ts: 0, dur: before + last + 1000, name: "<module>", cat: "python", args: {}},
    {ph: "X", pid: 1, tid: 2, ts: 400000, dur: 2200000, name: "compile jit_update", cat: "compile", args: {}});
  trace.otherData = {platform: "cpu"};
  await window.playground.showTrace(trace);
  return {first: first + before, last: last + before, whole: before + last + 1000};
}"""


SIMULATED = {
    "en": "Measured on 8 simulated devices, threads of one CPU: collective time here is threads waiting for one "
          "another, not a network.",
    "zh": "测量自 8 个模拟设备，即同一个 CPU 上的线程：这里的集合通信时间是线程彼此等待的时间，而不是网络。",
}
# What the top bar's buttons are called, in each language (their accessible names).
NAMES = {
    "en": {"profile": "Profile", "compare": "Compare JAX versions", "version": "JAX version",
           "more": "More: JAX version, Compare, language, theme", "wrap": "Wrap"},
    "zh": {"profile": "性能分析", "compare": "对比 JAX 版本", "version": "JAX 版本",
           "more": "更多：JAX 版本、对比、语言、主题", "wrap": "折行"},
}


def view(page: Page) -> dict:
    return page.evaluate("window.playground.timelineStats().view")


def frame(page: Page) -> None:
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def in_viewport(page: Page, selector: str) -> bool:
    return page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.top < innerHeight - 40; }""", selector)


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_the_timeline_opens_on_the_devices_and_explains_what_it_shows(browser: Browser, live_stack, size, language):
    with fresh(browser, live_stack, size, language) as page:
        spans = page.evaluate(PROFILE_JS, {"generator": SYNTHETIC_TRACE_JS})
        pane = page.locator("#panel-timeline")
        expect(page.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
        frame(page)
        # It opens on the devices' steps, not on the whole 2.8 s: their span and a little room.
        opened = view(page)
        device_span = spans["last"] - spans["first"]
        assert opened["end"] - opened["start"] < device_span * 1.2, (opened, spans)
        assert opened["start"] > spans["first"] - device_span * 0.1, (opened, spans)

        # The keys work at once, with the focus on the tab, not on the canvas: 0 shows the whole
        # trace, F the devices again, W zooms in.
        page.locator("#tab-timeline").focus()
        page.keyboard.press("0")
        frame(page)
        whole = view(page)
        assert whole["end"] - whole["start"] >= spans["whole"] * 0.99, whole
        page.keyboard.press("f")
        frame(page)
        assert view(page) == opened
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("w")
        frame(page)
        assert view(page)["end"] - view(page)["start"] < (opened["end"] - opened["start"]) * 0.9
        # The buttons say the same in words.
        pane.locator(".tl-whole").click()
        frame(page)
        assert view(page)["end"] - view(page)["start"] >= spans["whole"] * 0.99
        pane.locator(".tl-frame-devices").click()
        frame(page)
        assert view(page) == opened

        # Typing in the editor is typing: W there zooms nothing.
        if size == "wide":
            page.locator("#editor .monaco-editor").click()
            before = view(page)
            page.keyboard.press("w")
            frame(page)
            assert view(page) == before
            page.keyboard.press("Control+z")
            page.locator("#tab-timeline").click()

        # Simulated devices are named as such, with what it means for collectives.
        notice = pane.locator(".tl-simulated")
        if language == "en":
            expect(notice).to_contain_text("8 threads of one CPU: an all-reduce here measures waiting, not a network")
        else:
            expect(notice).to_contain_text("同一个 CPU 上的 8 个线程")
            expect(notice).to_contain_text("测到的是等待，而不是网络")
        # The tables' caption says what they measured, word for word.
        expect(pane.locator(".tl-table").first.locator(".tl-table-simulated")).to_have_text(SIMULATED[language])

        # Each lane, row and kind says what it is, in the page's language.
        glossary = pane.locator(".tl-glossary")
        glossary.locator("summary").click()
        terms = glossary.locator("dt").all_text_contents()
        assert "TFRT_CPU_0 … TFRT_CPU_7" in [term.strip() for term in terms], terms
        assert any("XLA Ops" in term for term in terms) and any("Host" in term for term in terms), terms
        notes = glossary.locator("dd").all_text_contents()
        assert len(notes) == len(terms) >= 8
        if language == "en":
            assert any("simulated CPU device" in note for note in notes), notes
            assert any("fused into one loop" in note for note in notes), notes
        else:
            assert all(re.search(r"[\u4e00-\u9fff]", note) for note in notes), notes

        # A click on a slice: its details, with what it is, in view beside the canvas (under it on
        # a phone, brought into view).
        page.locator("#panel-timeline canvas").focus()
        for _ in range(30):
            found = page.evaluate("q => window.playground.timelineLocate(q)", {"kind": "collective"})
            if found and found["right"] - found["left"] >= 10:
                break
            page.mouse.move(found["x"], found["y"])
            page.keyboard.press("w")
            frame(page)
        page.mouse.click(found["x"], found["y"])
        details = pane.locator(".tl-details")
        expect(details.locator(".tl-details-title")).not_to_have_text(re.compile("Selected slice|选中的片段"))
        expect(details.locator("dt").first).to_have_text("what" if language == "en" else "是什么")
        expect(details).to_contain_text("not a network" if language == "en" else "而不是网络")
        assert in_viewport(page, "#panel-timeline .tl-details"), "the details are below the fold"
        canvas_box = page.locator("#panel-timeline canvas").bounding_box()
        details_box = details.bounding_box()
        if size == "wide":
            assert details_box["x"] >= canvas_box["x"] + canvas_box["width"] - 1, (canvas_box, details_box)
            assert details_box["y"] < canvas_box["y"] + canvas_box["height"]
        assert_accessible(page, f"timeline {size} {language}")
        shoot(page, f"timeline-{size}-{language}")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_the_top_bar_names_its_buttons_and_profile_shows_it_is_on(browser: Browser, live_stack, size, language):
    with fresh(browser, live_stack, size, language) as page:
        if size == "phone":
            phone_top_bar(page, language)
            return
        for width in (1440, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            for button in ("#profile-toggle", "#compare-button", "#share-button"):
                label = page.locator(f"{button} span").last
                assert label.evaluate("e => getComputedStyle(e).clipPath") == "none", (width, button)
                assert label.bounding_box()["width"] > 14, (width, button)
            bar = page.locator(".topbar-playground").bounding_box()
            widths = page.evaluate("""() => [...document.querySelectorAll(
                '.topbar-playground > *, .topbar-playground .toolbar > *')]
                .filter((e) => e.offsetWidth).map((e) => `${e.id || e.className}:${e.offsetWidth}`)""")
            assert bar["height"] < 64, f"the bar wrapped at {width} px: {bar} {widths}"
        turns_on_plainly(page.locator("#profile-toggle"))
        expect(page.locator("#more-button")).to_be_hidden()
        assert_accessible(page, f"top bar, Profile on, {language}")
        shoot(page, f"topbar-wide-{language}")


def turns_on_plainly(toggle) -> None:
    """Profile pressed: its background changes and a dot shows that it is on."""
    off = toggle.evaluate("e => getComputedStyle(e).backgroundColor")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    on = toggle.evaluate("e => getComputedStyle(e).backgroundColor")
    dot = toggle.evaluate("e => getComputedStyle(e, '::after').backgroundColor")
    assert on != off and dot not in ("", "rgba(0, 0, 0, 0)"), (off, on, dot)


def phone_top_bar(page: Page, language: str) -> None:
    """At 390 px: Profile stays in the bar, found by its name, its on state plain; the JAX version
    and Compare are reached by their names through the More menu."""
    names = NAMES[language]
    toggle = page.get_by_role("button", name=names["profile"], exact=True)
    expect(toggle).to_be_visible()
    box = toggle.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    turns_on_plainly(toggle)
    expect(page.get_by_role("combobox", name=names["version"], exact=True)).to_be_hidden()
    expect(page.get_by_role("button", name=names["compare"], exact=True)).to_be_hidden()
    page.get_by_role("button", name=names["more"], exact=True).click()
    menu = page.locator("#more-menu")
    expect(menu.get_by_role("combobox", name=names["version"], exact=True)).to_be_visible()
    expect(menu.get_by_role("button", name=names["compare"], exact=True)).to_be_visible()
    assert_accessible(page, f"top bar at 390 px, Profile on, More open, {language}")
    shoot(page, f"topbar-phone-{language}")
    menu.get_by_role("button", name=names["compare"], exact=True).click()
    expect(page.locator("#compare-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#compare-dialog")).to_be_hidden()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_on_a_phone_the_version_and_compare_are_in_a_menu(
        browser: Browser, live_stack, language):
    with fresh(browser, live_stack, "phone", language) as page:
        more = page.locator("#more-button")
        expect(more).to_be_visible()
        expect(page.locator("#runtime-select")).to_be_hidden()
        # The bar's one row fits the phone: nothing past its right edge, the device's name whole.
        past = page.evaluate("""() => [...document.querySelectorAll('.topbar-playground .toolbar > *')]
            .filter((e) => e.offsetWidth && e.getBoundingClientRect().right > innerWidth)
            .map((e) => e.id || e.className)""")
        assert past == [], past
        select = page.locator("#device-select")
        assert select.evaluate("e => e.getBoundingClientRect().width") >= 96
        more.click()
        menu = page.locator("#more-menu")
        expect(menu).to_be_visible()
        expect(menu.locator("#runtime-select")).to_be_visible()
        expect(menu.locator("#compare-button")).to_be_visible()
        expect(menu.locator(".language-option")).to_have_count(2)
        expect(menu.locator("#theme-toggle")).to_be_visible()
        assert_accessible(page, f"phone More menu {language}")
        shoot(page, f"more-menu-phone-{language}")
        # The version chosen there is the one the page runs on.
        expect(page.locator("#runtime-select")).to_have_count(1)
        expect(menu.locator("#runtime-select")).to_be_enabled()
        menu.locator("#compare-button").click()
        expect(page.locator("#compare-dialog")).to_be_visible()
        expect(menu).to_be_hidden()
        page.keyboard.press("Escape")
        # Back on a wide screen, the version picker and Compare are back in the bar.
        page.set_viewport_size({"width": 1440, "height": 900})
        expect(page.locator(".topbar-playground .toolbar #runtime-select")).to_be_visible()
        expect(page.locator(".topbar-playground .toolbar #compare-button")).to_be_visible()
        expect(more).to_be_hidden()


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_long_lines_wrap_by_choice_and_it_is_remembered(browser: Browser, live_stack, size, language):
    with fresh(browser, live_stack, size, language) as page:
        # Wrap: off at first, on by choice, and still on after a reload.
        long_line = "x = " + " + ".join(f"value_{i}" for i in range(40))
        set_code(page, long_line + "\n")
        wrap = page.get_by_role("button", name=NAMES[language]["wrap"], exact=True)
        expect(wrap).to_have_attribute("id", "wrap-code")
        expect(wrap).to_have_attribute("aria-pressed", "false")
        lines = "() => document.querySelectorAll('#editor .view-line').length"
        assert page.evaluate(lines) == 2
        wrap.click()
        expect(wrap).to_have_attribute("aria-pressed", "true")
        page.wait_for_function(f"() => ({lines})() > 3")
        # Wrapped, nothing of the line is past the editor's right edge.
        right = page.evaluate("""() => Math.max(...[...document.querySelectorAll('#editor .view-line span')]
            .map((e) => e.getBoundingClientRect().right))""")
        editor = page.locator("#editor").bounding_box()
        assert right <= editor["x"] + editor["width"] + 1, (right, editor)
        assert_accessible(page, f"code wrapped at {size} in {language}")
        shoot(page, f"wrap-{size}-{language}")
        open_playground(page, reload=True)
        expect(page.locator("#wrap-code")).to_have_attribute("aria-pressed", "true")
        set_code(page, long_line + "\n")
        page.wait_for_function(f"() => ({lines})() > 3")
        # Off again by choice (Alt+Z, as the button says), and remembered off.
        page.locator("#editor .view-lines").click()
        page.keyboard.press("Alt+z")
        expect(page.locator("#wrap-code")).to_have_attribute("aria-pressed", "false")
        page.wait_for_function(f"() => ({lines})() == 2")
        open_playground(page, reload=True)
        expect(page.locator("#wrap-code")).to_have_attribute("aria-pressed", "false")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_examples_open_in_the_page_language(browser: Browser, live_stack, size, language):
    with fresh(browser, live_stack, size, language) as page:
        expected = {e["slug"]: e for e in examples("zh-hans" if language == "zh" else "en")}
        assert page.evaluate("slug => window.playground.openExample(slug)", "jit")
        page.wait_for_function("code => window.playground.getCode() === code", arg=expected["jit"]["code"])
        # What the editor shows opens with the docstring in the page's language.
        text = page.locator("#editor .view-lines").inner_text().replace("\xa0", " ")
        assert ("用 jit 编译更新步骤" if language == "zh" else "jit the update step") in text, text[:200]
        assert ("第一次调用时" in expected["jit"]["code"]) == (language == "zh")
        assert_accessible(page, f"example in {language} ({size})")
        shoot(page, f"example-{size}-{language}")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_a_run_that_compiled_nothing_says_so(browser: Browser, live_stack, size, language):
    with fresh(browser, live_stack, size, language) as page:
        set_code(page, "print(sum(range(10)))\n")
        page.locator("#run-button").click()
        assert wait_until_finished(page) == "succeeded"
        tab = page.locator("#tab-compiled")
        expect(tab.locator(".tab-count")).to_have_text("0")
        tab.click()
        # Neither "the cache was used" (a run that calls no jitted function used none) nor silence.
        said = "This run compiled nothing" if language == "en" else "这次运行没有编译任何内容"
        expect(page.locator("#panel-compiled .pane-placeholder-title")).to_have_text(said)
        assert_accessible(page, f"nothing compiled at {size} in {language}")
        shoot(page, f"compiled-none-{size}-{language}")
