"""Sharing in a real Chromium against the whole stack: the Share dialog, the snippet page a link
opens (its code and saved output, shown without running anything), forks, and the embed.

Screenshots of the snippet page, the dialog and the embed, light and dark, go to /tmp/screens
for a person to look at.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import SCREENS, get_code, open_playground, output, set_code, wait_until_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = """\
import jax
import jax.numpy as jnp

@jax.jit
def square_sum(x):
    return (x * x).sum()

print("sum of squares:", square_sum(jnp.arange(4.0)))
"""
PRINTED = "sum of squares: 14.0\n"


@contextmanager
def fresh_page(browser: Browser, live_stack, expected_error: str | None = None, **options):
    """A new profile (no draft, no run), its requests recorded, failing on any script error or
    console error (but one that contains ``expected_error``)."""
    context = browser.new_context(base_url=live_stack.url,
                                  **({"viewport": {"width": 1280, "height": 800}, "color_scheme": "light"} | options))
    page = context.new_page()
    problems: list[str] = []
    requests: list[tuple[str, str, str | None]] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" and not (expected_error and expected_error in m.text) else None)
    page.on("request", lambda r: requests.append((r.method, urlparse(r.url).path, r.post_data)))
    # A run started on the page's run socket is recorded as a POST of the same body would be.
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: requests.append(
        ("START", urlparse(ws.url).path, payload))))
    try:
        yield page, requests
    finally:
        context.close()
        if problems:
            print("problems on the page:", *problems, sep="\n  ")
    assert problems == [], problems


def runs_started(requests: list) -> list[dict]:
    """What each run the page started asked for: POST /api/runs's body, or the run socket's start."""
    out = []
    for method, path, body in requests:
        if method == "POST" and path == "/api/runs":
            out.append(json.loads(body))
        elif method == "START" and path == "/ws/runs/new/":
            start = json.loads(body)
            if start.pop("op", None) == "start":
                out.append(start)
    return out


def path_of(url: str) -> str:
    return urlparse(url).path


def share(page: Page, title: str | None = None, description: str | None = None, shortcut: bool = False):
    """Open the Share dialog, fill it in, create the link: (the link, what was posted, the request's headers)."""
    if shortcut:
        page.click("#editor .view-lines")
        page.keyboard.press("Control+s")
    else:
        page.click("#share-button")
    dialog = page.get_by_role("dialog", name="Share this code")
    expect(dialog).to_be_visible()
    expect(page.locator("#share-title-input")).to_be_focused()
    if title is not None:
        page.fill("#share-title-input", title)
    if description is not None:
        page.fill("#share-description", description)
    with page.expect_response(lambda r: r.url.endswith("/api/snippets") and r.request.method == "POST") as info:
        dialog.get_by_role("button", name="Create link").click()
    response = info.value
    assert response.status in (200, 201), response.text()
    link = page.locator("#share-link")
    expect(link).to_have_value(re.compile(r"^http://[^/]+/s/[0-9a-z]+$"))
    return link.input_value(), response.request.post_data_json, response.request.headers


def test_a_link_shows_the_code_and_its_saved_output_without_running_it(page: Page, browser: Browser, live_stack):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_stack.url)
    set_code(page, CODE)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    assert output(page) == PRINTED
    run_id = page.evaluate("window.playground.runId()")

    # Ctrl+S opens the dialog instead of saving the page.
    url, posted, headers = share(page, title="Sum of squares", description="Squares, *summed*.", shortcut=True)
    assert posted == {"code": CODE, "title": "Sum of squares", "description": "Squares, *summed*.",
                      "device": "cpu", "runtime": "jax-0.12.0.1", "run": run_id, "parent": None}
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    assert headers.get("x-csrftoken") == cookies["csrftoken"]
    slug = path_of(url).rsplit("/", 1)[1]

    # Copied at once, with a note; the embed code and the downloads are there.
    expect(page.locator("#share-link-note")).to_contain_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == url
    origin = f"{urlparse(url).scheme}://{urlparse(url).netloc}"
    expect(page.locator("#share-embed")).to_have_value(
        f'<iframe src="{origin}/embed/{slug}" width="100%" height="420" loading="lazy"'
        ' title="Sum of squares"></iframe>')
    expect(page.locator("#share-py")).to_have_attribute("href", f"{url}.py")
    expect(page.locator("#share-ipynb")).to_have_attribute("href", f"{url}.ipynb")
    page.click("#share-copy-embed")
    expect(page.locator("#share-embed-note")).to_contain_text("copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith("<iframe ")
    # Escape closes it, and the focus goes back to the editor it came from.
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert page.evaluate("document.activeElement.closest('#editor') !== null")

    with fresh_page(browser, live_stack) as (other, requests):
        # Someone with a draft of their own opens the link: the draft is not lost.
        open_playground(other)
        set_code(other, "print('my own draft')\n")
        open_playground(other, path=path_of(url))
        assert get_code(other) == CODE
        expect(other.locator("#output")).to_have_text(PRINTED)
        expect(other.locator("#run-status")).to_have_attribute("data-status", "succeeded")
        assert "square_sum" in other.evaluate("window.playground.compiledNames()")
        expect(other.locator("#tab-compiled .tab-count")).to_have_text("1")
        expect(other.locator(".output-bar-label")).to_contain_text("Saved output")
        own = other.evaluate("JSON.parse(localStorage.getItem('playground.drafts')).own.code")
        assert own == "print('my own draft')\n"
        expect(other.locator("#restore-code")).to_be_visible()

        # The strip, the title and the link preview.
        strip = other.locator(".snippet-strip")
        expect(strip.get_by_role("heading", name="Sum of squares")).to_be_visible()
        expect(strip.locator(".snippet-description em")).to_have_text("summed")
        expect(strip).to_contain_text(re.compile(r"saved with JAX \d+\.\d+\S* on CPU"))
        for ext in ("py", "ipynb", "json"):
            expect(strip.get_by_role("link", name=f".{ext}")).to_have_attribute("href", f"/s/{slug}.{ext}")
        expect(other).to_have_title("Sum of squares · JAX Playground")
        assert other.locator("meta[property='og:title']").get_attribute("content") == "Sum of squares"
        assert other.locator("meta[property='og:url']").get_attribute("content") == url
        assert other.locator("meta[name='twitter:card']").get_attribute("content") == "summary"

        other.wait_for_timeout(1000)  # anything the page would start on its own has started by now
        assert runs_started(requests) == [], "opening a link started a run"
        assert ("GET", f"/api/runs/{run_id}", None) in requests
        assert not any(r[1].startswith("/ws/") for r in requests), "opening a link followed a run"

        # Editing makes the edit the draft, as anywhere; Restore brings the old draft back.
        other.click("#restore-code")
        assert get_code(other) == "print('my own draft')\n"


def test_a_fork_links_to_its_original_and_the_original_lists_it(page: Page, browser: Browser, live_stack):
    set_code(page, CODE)
    page.keyboard.press("Control+Enter")
    assert wait_until_finished(page) == "succeeded"
    url, _, _ = share(page, title="Sum of squares")
    slug = path_of(url).rsplit("/", 1)[1]

    with fresh_page(browser, live_stack) as (other, requests):
        open_playground(other, path=path_of(url))
        expect(other.locator("#output")).to_have_text(PRINTED)

        # Run it again, unchanged: the run names the snippet, and its saved output stays viewable.
        other.click("#run-button")
        assert wait_until_finished(other) == "succeeded"
        assert runs_started(requests) == [{"code": CODE, "device": "cpu", "snippet": slug, "runtime": "jax-0.12.0.1"}]
        toggle = other.get_by_role("button", name="Saved output")
        expect(toggle).to_have_attribute("aria-pressed", "false")
        expect(other.locator(".output-column-saved")).to_be_hidden()
        toggle.click()
        expect(toggle).to_have_attribute("aria-pressed", "true")
        saved = other.locator(".output-column-saved")
        expect(saved).to_be_visible()
        expect(saved.locator(".output")).to_have_text(PRINTED)
        expect(other.locator("#output")).to_have_text(PRINTED)
        saved_box, live_box = saved.bounding_box(), other.locator("#output").bounding_box()
        assert saved_box["x"] + saved_box["width"] <= live_box["x"], "side by side"

        # Edit and share: a fork of this snippet.
        forked_code = CODE + "print('and a fork')\n"
        set_code(other, forked_code)
        # The dialog offers the original's title marked as a fork's; the person's own replaces it.
        other.click("#share-button")
        expect(other.locator("#share-title-input")).to_have_value("Sum of squares (fork)")
        other.keyboard.press("Escape")
        fork_url, posted, _ = share(other, title="Sum of squares, forked")
        assert posted["parent"] == slug
        assert posted["run"] is None  # the code changed since its last run
        assert path_of(fork_url) != path_of(url)

    with fresh_page(browser, live_stack) as (third, requests):
        open_playground(third, path=path_of(fork_url))
        assert get_code(third) == forked_code
        parent = third.locator(".snippet-parent")
        expect(parent).to_contain_text("forked from Sum of squares")
        expect(parent.get_by_role("link")).to_have_attribute("href", f"/s/{slug}")
        # Never run: it says so, and how to run it.
        expect(third.locator("#output-placeholder")).to_have_text(
            "This snippet has not been run yet. Run (Ctrl+Enter) runs it.")
        expect(third.locator("#run-status")).to_be_hidden()

        SCREENS.mkdir(parents=True, exist_ok=True)
        third.screenshot(path=SCREENS / "snippet-fork-light.png")

        open_playground(third, path=path_of(url))
        third.screenshot(path=SCREENS / "snippet-with-forks-light.png")
        forks = third.locator(".snippet-forks")
        expect(forks).to_contain_text("1 fork")
        expect(forks.get_by_role("link", name="Sum of squares, forked")).to_have_attribute("href", path_of(fork_url))
        assert runs_started(requests) == []


def test_the_dialog_says_in_plain_words_why_no_link_was_made(page: Page):
    page.route("**/api/snippets", lambda route: route.fulfill(
        status=429, content_type="application/json", headers={"Retry-After": "600"},
        body=json.dumps({"error": "too many shared snippets: at most 120 an hour; try again in 600 s"})))
    page.click("#share-button")
    page.get_by_role("button", name="Create link").click()
    error = page.locator("#share-error")
    expect(error).to_have_text("Too many links were shared from here in the last hour. Try again in 10 minutes.")
    expect(page.get_by_role("dialog")).to_be_visible()

    page.unroute("**/api/snippets")
    page.route("**/api/snippets", lambda route: route.fulfill(
        status=503, content_type="application/json", body=json.dumps({"error": "the queue is unreachable"})))
    page.get_by_role("button", name="Create link").click()
    expect(error).to_have_text("The playground cannot save links right now. Try again in a few seconds.")

    page.unroute("**/api/snippets")
    set_code(page, "x = 1\n" + "#" * (64 * 1024) + "\n")
    page.get_by_role("button", name="Create link").click()
    expect(error).to_contain_text("The code is")
    expect(error).to_contain_text("the limit is 65536 bytes")


def test_the_strip_says_when_jax_moved_on_or_the_device_is_offline(browser: Browser, live_stack):
    with fresh_page(browser, live_stack) as (page, _):
        created = page.request.post("/api/snippets", data={"code": "print(1)\n"})
        slug = created.json()["slug"]
        saved_with = page.request.get(f"/api/snippets/{slug}").json()["jax_version"]
        assert saved_with

        def devices(change):
            def handle(route):
                listed = route.fetch().json()
                for device in listed["devices"]:
                    if device["kind"] == "cpu":
                        change(device)
                route.fulfill(json=listed)
            return handle

        notice = page.locator("#snippet-notice")
        open_playground(page, path=f"/s/{slug}")
        expect(notice).to_be_hidden()  # the same JAX today

        page.route("**/api/devices", devices(lambda d: d.update(jax_version="99.0")))
        open_playground(page, path=f"/s/{slug}")
        # Its runs go to the runtime it is pinned to, whatever JAX the kind's default now has.
        expect(notice).to_have_text(f"Pinned to runtime jax-0.12.0.1: Run uses JAX {saved_with}, as when it was saved "
                                    "(CPU's default is JAX 99.0).")
        page.screenshot(path=SCREENS / "snippet-notice-light.png")

        page.unroute("**/api/devices")
        page.route("**/api/devices", devices(lambda d: d.update(online=False)))
        page.goto(f"/s/{slug}")
        expect(notice).to_have_text("No CPU executor is online right now, so it cannot be run at the moment.")


def test_a_link_opened_before_its_run_is_all_stored_waits_for_the_rest(browser: Browser, live_stack):
    """The recorder stores a run's last events a moment after the page that ran it saw them: a
    link opened in that moment is answered the run without its end, and asks again."""
    with fresh_page(browser, live_stack) as (page, _):
        code = "import time\nprint('first', flush=True)\ntime.sleep(0.3)\nprint('last')\n"
        run = page.request.post("/api/runs", data={"code": code}).json()
        assert live_stack.wait_finished(run["id"])["status"] == "succeeded"
        slug = page.request.post("/api/snippets", data={"code": code, "run": run["id"]}).json()["slug"]
        answered = []

        def not_yet_stored(route):
            stored = route.fetch().json()
            answered.append(len(answered) < 2)
            if answered[-1]:  # as the recorder had it: the last batch (the last line, the end) missing
                last = [e.get("text") for e in stored["events"]].index("last\n")
                stored |= {"events": stored["events"][:last], "status": "running", "finished_at": None}
            route.fulfill(json=stored)

        page.route(f"**/api/runs/{run['id']}*", not_yet_stored)
        open_playground(page, path=f"/s/{slug}")
        expect(page.locator("#output")).to_have_text("first\nlast\n")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
        assert answered[:3] == [True, True, False], answered


def test_the_top_bar_has_the_account_links(page: Page, browser: Browser, live_stack):
    expect(page.get_by_role("link", name="Sign in")).to_have_attribute("href", "/accounts/login/?next=/")
    # Sign up is in the bar from 1440 px (below, the toolbar's names take its room; the sign-in
    # page offers it).
    page.set_viewport_size({"width": 1440, "height": 800})
    expect(page.get_by_role("link", name="Sign up")).to_have_attribute("href", "/accounts/signup/")
    page.set_viewport_size({"width": 1280, "height": 800})

    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user("ada", password="analytical-engine-1843")
    client = Client()
    client.force_login(user)
    with fresh_page(browser, live_stack) as (signed_in, _):
        signed_in.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                                        "url": live_stack.url}])
        open_playground(signed_in)
        expect(signed_in.get_by_role("link", name="Sign in")).to_have_count(0)
        account = signed_in.locator("#account-button")
        expect(account).to_have_text("ada")
        account.click()
        menu = signed_in.locator("#account-menu")
        expect(menu).to_be_visible()
        expect(menu.get_by_role("link", name="My snippets")).to_have_attribute("href", "/me/snippets/")
        expect(menu.get_by_role("link", name="Account")).to_have_attribute("href", "/accounts/")
        sign_out = menu.locator("form")
        expect(sign_out).to_have_attribute("method", "post")
        expect(sign_out).to_have_attribute("action", "/accounts/logout/")
        expect(sign_out.locator("input[name=csrfmiddlewaretoken]")).to_have_count(1)
        expect(sign_out.get_by_role("button", name="Sign out")).to_be_visible()
        signed_in.screenshot(path=SCREENS / "account-menu-light.png")
        signed_in.keyboard.press("Escape")

        # A signed-in session's API calls carry the CSRF token.
        set_code(signed_in, "print('mine')\n")
        _, _, headers = share(signed_in)
        cookies = {c["name"]: c["value"] for c in signed_in.context.cookies()}
        assert headers.get("x-csrftoken") == cookies["csrftoken"]


def test_the_embed_is_compact_and_runs(browser: Browser, live_stack):
    with fresh_page(browser, live_stack) as (page, requests):
        created = page.request.post("/api/snippets", data={"code": "print('hello from the embed')\n",
                                                           "title": "Embedded hello"})
        assert created.status == 201
        slug = created.json()["slug"]
        response = page.goto(f"/embed/{slug}")
        # Other sites may frame it.
        assert "x-frame-options" not in response.headers
        assert "frame-ancestors 'none'" not in response.headers.get("content-security-policy", "")
        open_playground(page, path=f"/embed/{slug}")

        for clutter in ("#examples-button", "#libraries-button", "#theme-toggle", "#share-button", ".snippet-strip"):
            expect(page.locator(clutter)).to_have_count(0)
        link = page.get_by_role("link", name="Open in the JAX Playground")
        expect(link).to_have_attribute("href", f"/s/{slug}")
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener")
        expect(page.locator("#output-placeholder")).to_contain_text("has not been run yet")

        page.get_by_role("button", name="Run").click()
        assert wait_until_finished(page) == "succeeded"
        assert output(page) == "hello from the embed\n"
        posted = [json.loads(body) for method, path, body in requests if method == "POST" and path == "/api/runs"]
        assert posted == [{"code": "print('hello from the embed')\n", "device": "cpu", "snippet": slug,
                           "runtime": "jax-0.12.0.1"}]
        # An embed never writes the visitor's own draft.
        assert page.evaluate("localStorage.getItem('playground.drafts')") is None


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_removed_snippet_says_so(browser: Browser, live_stack, theme: str):
    from django.utils import timezone

    from snippets.models import Snippet

    SCREENS.mkdir(parents=True, exist_ok=True)
    with fresh_page(browser, live_stack, expected_error="status of 410", color_scheme=theme) as (page, _):
        slug = page.request.post("/api/snippets", data={"code": "print('gone')\n"}).json()["slug"]
        Snippet.objects.filter(slug=slug).update(removed_at=timezone.now(), removed_reason="spam")
        for path in (f"/s/{slug}", f"/embed/{slug}"):
            response = page.goto(path)
            assert response.status == 410
            expect(page.get_by_role("heading", name="This snippet was removed")).to_be_visible()
            expect(page.get_by_text("Reason: spam")).to_be_visible()
            expect(page.get_by_role("link", name="Open the JAX Playground")).to_have_attribute("href", "/")
            assert "gone" not in page.content()
        page.screenshot(path=SCREENS / f"removed-{theme}.png")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_sharing_lays_out_cleanly(browser: Browser, live_stack, theme: str):
    """Screenshots for a person to look at (in /tmp/screens): the snippet page, the dialog with
    its link and the embed; nothing overflows sideways."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    with fresh_page(browser, live_stack, color_scheme=theme) as (page, _):
        open_playground(page)
        set_code(page, CODE)
        page.keyboard.press("Control+Enter")
        assert wait_until_finished(page) == "succeeded"
        page.click("#share-button")
        page.fill("#share-title-input", "Sum of squares with jit")
        page.screenshot(path=SCREENS / f"share-form-{theme}.png")
        page.keyboard.press("Escape")
        url, _, _ = share(page, title="Sum of squares with jit",
                          description="Squares a vector and sums it, **compiled** with `jax.jit`: "
                                      "the *Compiled* tab shows its jaxpr and HLO.")
        page.screenshot(path=SCREENS / f"share-dialog-{theme}.png")
        page.keyboard.press("Escape")

        open_playground(page, path=path_of(url))
        expect(page.locator("#output")).to_have_text(PRINTED)
        page.screenshot(path=SCREENS / f"snippet-{theme}.png")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")

        page.click("#run-button")
        assert wait_until_finished(page) == "succeeded"
        page.get_by_role("button", name="Saved output").click()
        page.screenshot(path=SCREENS / f"snippet-compare-{theme}.png")
        page.set_viewport_size({"width": 600, "height": 900})
        page.screenshot(path=SCREENS / f"snippet-narrow-{theme}.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")

        slug = path_of(url).rsplit("/", 1)[1]
        for width, height in ((720, 420), (420, 420)):
            page.set_viewport_size({"width": width, "height": height})
            open_playground(page, path=f"/embed/{slug}")
            expect(page.locator("#output")).to_have_text(PRINTED)
            page.screenshot(path=SCREENS / f"embed-{width}-{theme}.png")
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
            assert page.evaluate("document.documentElement.scrollHeight <= innerHeight"), "the embed fits its frame"
