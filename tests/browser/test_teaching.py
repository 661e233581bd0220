"""What a learner and an instructor meet, at 1440 and 390 px, in English and in Chinese, each page
axe-clean: the full-width punctuation error fixed from its card in one click (and its hover
without unrelated docs); a notebook that says truthfully why it holds a cell back (not run, failed,
stale), a signed-in person's notebook at its own address, and a Restart that asks first, naming
what is lost; the teaching pages' one sentence about where checks run, in short on a student's
submissions, the public checks guide; a join link whose sign-in names the course and offers an
account first; no regrade offer before there are submissions, the validation in view after Save;
the dashboard's feed rebuilt on a reload, with who joined and what their submission ran; and an
example whose every line was replaced no longer named after it.

Screenshots go to /tmp/screens/teaching-*.png for a person to look at.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from django.test import Client
from playwright.sync_api import Browser, Page, expect

from tests import people as people_fixtures

from .playground import SCREENS, assert_accessible, get_code, open_playground, run_code, set_code
from .test_courses import GRADE_TIMEOUT_MS, WRONG, off_the_loop
from .test_notebook import cell, edit, open_notebook, output, wait_finished
from .test_notebook_files import NOTEBOOK_URL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"wide": (1440, 900), "phone": (390, 844)}
LANGUAGES = {"en": "en-US", "zh": "zh-CN"}
CASES = [(size, lang) for size in SIZES for lang in LANGUAGES]
IDS = [f"{size}-{lang}" for size, lang in CASES]
SENTENCE = {
    "en": "The checks run after the student's code, in a process of their own: the checker, a sandboxed "
          "runner that no student code ever runs in.",
    "zh": "检查项在学生的代码之后运行，运行在单独的进程里：检查器，一个从不运行任何学生代码的沙箱运行器。",
}
WORDS = {
    "en": {"replace": "Replace all with half-width", "failed": "ran in this session and did not succeed",
           "restart": "Restart", "cancel": "Cancel", "lost": "Lost:",
           "account": "Create an account", "sign_in": "Sign in to join", "edit": "Edit", "saved": "Saved",
           "lost_names": "Lost: what 1 cell defined in this session, alpha, beta."},
    "zh": {"replace": "全部替换为半角", "failed": "已在本会话中运行，但没有成功",
           "restart": "重启", "cancel": "取消", "lost": "将丢失", "account": "创建账户",
           "sign_in": "登录并加入", "edit": "编辑", "saved": "已保存",
           "lost_names": "将丢失：本会话中 1 个单元格定义的名称，alpha、beta。"},
}


_fresh_rate_limits = people_fixtures.fresh_rate_limits


@contextmanager
def context_for(browser: Browser, live_stack, size: str, lang: str, user=None):
    """A fresh profile at ``size`` whose browser asks for ``lang``, signed in as ``user`` (None:
    signed out). Fails on any uncaught script error."""
    width, height = SIZES[size]
    context = browser.new_context(base_url=live_stack.url, viewport={"width": width, "height": height},
                                  locale=LANGUAGES[lang], color_scheme="light", reduced_motion="reduce")
    if user is not None:
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_stack.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


def shoot(page: Page, name: str, full_page: bool = False) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENS / f"teaching-{name}.png", full_page=full_page)


def in_view(page: Page, selector: str) -> bool:
    return page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
        return r.top >= 0 && r.top < innerHeight; }""", selector)


# A mistake's fix, one click from where it is explained ----------------------------------------

@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_the_full_width_error_card_fixes_the_code_in_one_click(browser: Browser, live_stack, size, lang):
    with context_for(browser, live_stack, size, lang) as page:
        open_playground(page)
        assert run_code(page, 'print（"你好"，1）\n') == "failed"
        card = page.locator("#error-box")
        fix = page.get_by_role("button", name=WORDS[lang]["replace"])
        expect(fix).to_be_visible()
        fix.scroll_into_view_if_needed()
        assert_accessible(page, f"the full-width error card at {size} in {lang}")
        shoot(page, f"fullwidth-card-{size}-{lang}")
        fix.click()
        assert get_code(page) == 'print("你好",1)\n'
        expect(fix).to_be_disabled()
        expect(card).to_contain_text("3")  # how many it replaced
        # One undo step takes all of it back, as the editor's own quick fix does.
        page.evaluate("() => { window.playground.editor.focus(); window.playground.editor.trigger('t', 'undo'); }")
        assert get_code(page) == 'print（"你好"，1）\n'
        page.evaluate("() => window.playground.editor.trigger('t', 'redo')")
        assert run_code(page, get_code(page)) == "succeeded"
        expect(page.locator("#output")).to_contain_text("你好 1")


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_hovering_a_full_width_character_shows_its_diagnosis_without_unrelated_docs(browser, live_stack, size, lang):
    with context_for(browser, live_stack, size, lang) as page:
        open_playground(page)
        set_code(page, "print（1)\n")
        page.wait_for_function("() => window.playground.markers('fullwidth').some(m => /U\\+FF08/.test(m.message))",
                               timeout=15_000)
        # The mouse on the "（" (column 6): the editor's hover.
        point = page.evaluate("""() => { const e = window.playground.editor;
            const p = e.getScrolledVisiblePosition({lineNumber: 1, column: 6});
            const r = e.getDomNode().getBoundingClientRect();
            return {x: r.left + p.left + 4, y: r.top + p.top + p.height / 2}; }""")
        page.mouse.move(point["x"], point["y"])
        hover = page.locator(".monaco-hover:not(.hidden)").first
        expect(hover).to_contain_text("U+FF08", timeout=10_000)
        page.wait_for_timeout(1500)  # the docs, if any were coming, would have come by now
        text = hover.inner_text()
        assert "Prints the values" not in text and "print(*args" not in text, text
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", text), text  # the diagnosis in the page's language
        assert_accessible(page, f"the full-width character's hover at {size} in {lang}")
        shoot(page, f"fullwidth-hover-{size}-{lang}")


# The notebook says why a cell is held back, and Restart asks first ----------------------------

# The notice of cell 2 (``print(answer)``) when cell 1 (``answer = ...``) holds it back, word for
# word: it has not run in this session, it ran and failed, or it was edited since it ran.
HELD_BACK = {
    "not-run": {"en": "This cell reads from cells whose values are not current: cell 1 (answer) has not run in "
                      "this session.",
                "zh": "此单元格读取的值来自尚未更新的单元格：单元格 1（answer）尚未在本会话中运行。"},
    "failed": {"en": "This cell reads from cells whose values are not current: cell 1 (answer) ran in this "
                     "session and did not succeed.",
               "zh": "此单元格读取的值来自尚未更新的单元格：单元格 1（answer）已在本会话中运行，但没有成功。"},
    "stale": {"en": "This cell reads from cells whose values are not current: cell 1 (answer) is stale: edited "
                    "since it ran.",
              "zh": "此单元格读取的值来自尚未更新的单元格：单元格 1（answer）已过期（运行后已修改）。"},
}
BUTTONS = {"en": ("Run stale first", "Run anyway"), "zh": ("先运行已过期的单元格", "仍然运行")}


def names_known(page: Page, *cells: int) -> None:
    """What each cell defines and reads is asked of the server a moment after an edit: as a person
    would, go on once that is known for ``cells``' code as it is now."""
    page.wait_for_function("cells => cells.every((i) => window.notebook.names(i) !== null)", arg=list(cells),
                           timeout=15_000)


def restart_for_good(page: Page, session: str) -> None:
    """After Restart's question was cancelled: the session is the same one; asked again and
    confirmed, a new session takes its place."""
    assert page.evaluate("window.notebook.session()") == session
    page.locator("#restart-button").click()
    page.locator("#restart-confirm").click()
    page.wait_for_function("s => window.notebook.session() && window.notebook.session() !== s", arg=session,
                           timeout=60_000)


@pytest.mark.parametrize("reason", ["not-run", "stale"])
@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_a_cell_held_back_by_one_not_run_or_stale_says_which(browser, live_stack, size, lang, reason):
    with context_for(browser, live_stack, size, lang) as page:
        open_notebook(page)
        if reason == "stale":
            edit(page, 0, "answer = 42\n")
            page.keyboard.press("Shift+Enter")
            assert wait_finished(page, 0) == "succeeded"
            edit(page, 0, "answer = 43\n")  # edited, not run again
        else:
            edit(page, 0, "answer = 42\n")  # never run
            page.keyboard.press("Escape")
            page.keyboard.press("b")  # a cell below, as Jupyter's command mode makes one
            expect(page.locator(".cell")).to_have_count(2)
        edit(page, 1, "print(answer)\n")
        names_known(page, 0, 1)
        page.keyboard.press("Control+Enter")
        notice = cell(page, 1).locator(".cell-notice")
        expect(notice.locator(".cell-notice-text")).to_have_text(HELD_BACK[reason][lang])
        expect(notice.locator("code")).to_have_text(["answer"])
        run_first, anyway = BUTTONS[lang]
        expect(notice.get_by_role("button", name=run_first, exact=True)).to_be_focused()
        expect(notice.get_by_role("button", name=anyway, exact=True)).to_be_visible()
        notice.scroll_into_view_if_needed()
        assert_accessible(page, f"a cell held back by one {reason} at {size} in {lang}")
        shoot(page, f"notebook-held-back-{reason}-{size}-{lang}")
        # Run stale first runs cell 1 as it is now, then cell 2, which reads it.
        notice.get_by_role("button", name=run_first, exact=True).click()
        assert wait_finished(page, 1) == "succeeded"
        assert output(page, 1).strip() == ("43" if reason == "stale" else "42")

@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_a_cell_held_back_by_a_failed_cell_says_it_failed_and_restart_asks_first(browser, live_stack, size, lang):
    with context_for(browser, live_stack, size, lang) as page:
        open_notebook(page)
        edit(page, 0, "answer = 42\nraise ValueError('boom')\n")
        page.keyboard.press("Shift+Enter")
        assert wait_finished(page, 0) == "failed"
        edit(page, 1, "print(answer)\n")
        names_known(page, 1)
        page.keyboard.press("Control+Enter")
        notice = cell(page, 1).locator(".cell-notice")
        expect(notice.locator(".cell-notice-text")).to_have_text(HELD_BACK["failed"][lang])
        expect(notice).not_to_contain_text("has not run" if lang == "en" else "尚未在本会话中运行")
        notice.scroll_into_view_if_needed()
        assert_accessible(page, f"a cell held back by a failed one at {size} in {lang}")
        shoot(page, f"notebook-held-back-{size}-{lang}")

        session = page.evaluate("window.notebook.session()")
        page.locator("#restart-button").click()
        dialog = page.locator("#restart-dialog")
        expect(dialog).to_be_visible()
        expect(dialog.locator("#restart-lost")).to_contain_text(WORDS[lang]["lost"])
        expect(dialog.locator("#restart-lost code")).to_have_text(["answer"])
        assert_accessible(page, f"the Restart dialog at {size} in {lang}")
        shoot(page, f"notebook-restart-{size}-{lang}")
        # Cancel keeps the session; the dialog's Restart ends it.
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        restart_for_good(page, session)


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_a_signed_out_notebook_gets_its_own_address_at_its_first_words(browser, live_stack, size, lang):
    with context_for(browser, live_stack, size, lang) as page:
        open_notebook(page)
        assert page.url.endswith("/notebooks/new")  # nothing written yet: nothing to give an address to
        edit(page, 0, "kept = 'in this browser'\n")
        page.wait_for_url(re.compile(r"/notebooks/draft/[0-9a-z]{12}$"))
        address = page.url
        page.wait_for_timeout(400)  # the browser's copy is written a moment after the edit
        open_notebook(page, address)
        assert page.evaluate("window.notebook.code(0)") == "kept = 'in this browser'\n"
        # "New notebook" opens the draft written last, at its address.
        open_notebook(page, "/notebooks/new")
        assert page.url == address
        assert page.evaluate("window.notebook.code(0)") == "kept = 'in this browser'\n"
        assert_accessible(page, f"a signed-out notebook at its address at {size} in {lang}")
        shoot(page, f"notebook-draft-address-{size}-{lang}")


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_a_signed_in_notebook_gets_its_own_address_and_restart_asks_first(
        browser, live_stack, people, size, lang):
    with context_for(browser, live_stack, size, lang, people["ines"]) as page:
        open_notebook(page)
        assert page.url.endswith("/notebooks/new")  # nothing written yet: nothing saved on the site
        source = "alpha = 1\nbeta = alpha + 1\nprint(beta)\n"
        edit(page, 0, source)
        # The first words make the notebook on the site: the address becomes its own.
        page.wait_for_url(NOTEBOOK_URL, timeout=15_000)
        address = page.url
        expect(page.locator("#save-state")).to_have_text(WORDS[lang]["saved"])
        page.keyboard.press("Shift+Enter")
        assert wait_finished(page, 0) == "succeeded"

        # Restart asks first, naming what the session would lose.
        session = page.evaluate("window.notebook.session()")
        page.get_by_role("button", name=WORDS[lang]["restart"], exact=True).click()
        dialog = page.locator("#restart-dialog")
        expect(dialog).to_be_visible()
        expect(dialog.locator("#restart-lost")).to_have_text(WORDS[lang]["lost_names"])
        expect(dialog.locator("#restart-confirm")).to_be_focused()
        assert_accessible(page, f"a signed-in notebook's Restart dialog at {size} in {lang}")
        shoot(page, f"notebook-signed-in-restart-{size}-{lang}")
        dialog.get_by_role("button", name=WORDS[lang]["cancel"], exact=True).click()
        expect(dialog).to_be_hidden()
        restart_for_good(page, session)
        page.wait_for_function("() => window.notebook.stale()[0]")  # it ran in the session that ended

        # Its own address opens it again, as saved on the site (saved now: the page waits a moment
        # after a change, the cell Shift+Enter added, before it saves).
        page.evaluate("window.notebook.save()")
        expect(page.locator("#save-state")).to_have_text(WORDS[lang]["saved"])
        open_notebook(page, address)
        assert page.evaluate("window.notebook.code(0)") == source
        expect(page.locator("#notebook-notice")).to_be_hidden()  # the site's copy, nothing restored over it
        assert_accessible(page, f"a signed-in notebook at its address at {size} in {lang}")
        shoot(page, f"notebook-signed-in-address-{size}-{lang}")


# Teaching pages that agree, and a join link that names its course ------------------------------

@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_the_guide_is_public_and_a_join_links_sign_in_names_the_course(
        browser, live_stack, course, size, lang):
    course_, _ = course
    with context_for(browser, live_stack, size, lang) as page:
        page.goto("/courses/checks")
        assert page.url.endswith("/courses/checks")  # no sign-in on the way
        expect(page.locator("article.checks-guide")).to_contain_text(SENTENCE[lang])
        assert_accessible(page, f"the public checks guide at {size} in {lang}")
        shoot(page, f"checks-guide-{size}-{lang}")

        page.goto(f"/courses/join/{course_.join_code}")
        account = page.get_by_role("link", name=WORDS[lang]["account"])
        sign_in = page.get_by_role("link", name=WORDS[lang]["sign_in"])
        assert account.bounding_box()["y"] <= sign_in.bounding_box()["y"]
        assert account.bounding_box()["x"] <= sign_in.bounding_box()["x"] or \
            account.bounding_box()["y"] < sign_in.bounding_box()["y"]
        sign_in.click()
        expect(page).to_have_url(re.compile(rf"/courses/join/{course_.join_code}/signin"))
        page.wait_for_load_state("load")  # its style sheets applied before their sizes are judged
        expect(page.locator("h1")).to_have_text("JAX 101")
        first = page.get_by_role("link", name=WORDS[lang]["account"])
        assert first.bounding_box()["y"] < page.locator("#id_username").bounding_box()["y"]
        assert_accessible(page, f"a join link's sign-in at {size} in {lang}")
        shoot(page, f"join-signin-{size}-{lang}", full_page=True)
        # The plain sign-in page, sent a join link as next, is the course's one.
        page.goto(f"/accounts/login/?next=/courses/join/{course_.join_code}")
        expect(page.locator("h1")).to_have_text("JAX 101")
        page.fill("#id_username", "otto")
        page.fill("#id_password", people_password())
        page.locator("main form.form button[type=submit]").click()
        expect(page).to_have_url(re.compile(rf"/courses/join/{course_.join_code}$"))
        expect(page.locator("#join-button")).to_be_visible()


def people_password() -> str:
    return people_fixtures.PASSWORD


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_the_authoring_form_says_where_checks_run_and_save_shows_the_verdict(
        browser, live_stack, course, people, size, lang):
    _, assignment = course
    with context_for(browser, live_stack, size, lang, people["ines"]) as page:
        page.goto(f"/assignments/{assignment.pk}/")
        page.wait_for_function("() => window.playground?.editors().length === 4")
        page.get_by_role("tab", name=WORDS[lang]["edit"]).click()
        expect(page.locator("#edit-checks-where")).to_contain_text(SENTENCE[lang])
        # The checks change, and no one has submitted: no regrade offer.
        page.evaluate("() => { const e = window.playground.editors()[2];"
                      " e.setValue(e.getValue() + '\\n# changed\\n'); }")
        page.locator("#save-assignment").click()
        expect(page.locator("#edit-saved")).not_to_be_empty()
        expect(page.locator("#regrade-offer")).to_be_hidden()
        page.wait_for_function("() => { const r = document.querySelector('#validation-heading')"
                               ".getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }")
        assert_accessible(page, f"the authoring form after Save at {size} in {lang}")
        shoot(page, f"authoring-saved-{size}-{lang}")


# What a student is told of their submissions: the authoring form's sentence, in short.
GRADED = {
    "en": "Every submission is kept and graded: your code runs first, then the checks run in the checker, a "
          "sandboxed runner that your code never runs in. Submit as often as you like.",
    "zh": "每次提交都会保留并评分：先运行你的代码，然后检查项在检查器中运行，检查器是一个从不运行你的代码的沙箱运行器。"
          "提交次数不限。",
}


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_a_student_is_told_where_their_submissions_are_graded(
        browser, live_stack, course, people, size, lang):
    _, assignment = course
    with context_for(browser, live_stack, size, lang, people["sam"]) as page:
        page.goto(f"/assignments/{assignment.pk}/")
        page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")
        page.get_by_role("tab", name="Submissions" if lang == "en" else "提交记录").click()
        hint = page.locator(".submissions-hint")
        expect(hint).to_have_text(GRADED[lang])
        hint.scroll_into_view_if_needed()
        assert_accessible(page, f"a student's submissions at {size} in {lang}")
        shoot(page, f"student-submissions-{size}-{lang}")


# The feed after a reload, item by item, newest first: the grade, the run it came from, the joining.
FEED = {
    "en": ["sam submitted Squares: 1 / 3", "sam submission ran Squares: succeeded", "sam joined the course"],
    "zh": ["sam 提交了 Squares：1 / 3", "sam 的提交运行了 Squares：成功", "sam 加入了课程"],
}


@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_the_dashboards_feed_after_a_reload_has_who_joined_and_what_their_submission_ran(
        browser, live_stack, course, people, size, lang):
    from courses.actions.submissions import do_submit

    course_, assignment = course
    off_the_loop(do_submit, assignment, people["sam"], WRONG)
    with context_for(browser, live_stack, size, lang, people["ines"]) as page:
        page.goto(f"/courses/{course_.pk}/dashboard")
        expect(page.locator("#live-state")).to_have_attribute("data-state", "live")
        # Graded, live or from what is stored: the grade and the run it came from are in the feed.
        expect(page.locator("#feed .feed-item[data-kind='submission'] .feed-score")).to_have_text(
            "1 / 3", timeout=GRADE_TIMEOUT_MS)
        expect(page.locator("#feed .feed-item[data-kind='run']")).to_have_attribute("data-status", "succeeded")
        page.reload()
        expect(page.locator("#live-state")).to_have_attribute("data-state", "live")
        items = page.locator("#feed .feed-item")
        expect(items.locator(".feed-text")).to_have_text(FEED[lang])
        assert [items.nth(i).get_attribute("data-kind") for i in range(3)] == ["submission", "run", "member"]
        expect(items.nth(1)).to_have_attribute("data-status", "succeeded")
        assert_accessible(page, f"the dashboard's feed after a reload at {size} in {lang}")
        shoot(page, f"dashboard-feed-{size}-{lang}", full_page=True)


# An example's name goes with its code -----------------------------------------------------------

@pytest.mark.parametrize(("size", "lang"), CASES, ids=IDS)
def test_an_example_whose_every_line_was_replaced_is_not_named_after_it(browser, live_stack, size, lang):
    with context_for(browser, live_stack, size, lang) as page:
        open_playground(page, path="/#example=vmap")
        name = page.locator("#file-name")
        expect(name).to_have_text("05-vmap.py")
        page.locator("#editor .view-lines").click()
        page.keyboard.press("End")
        page.keyboard.type("  # mine")
        expect(name).to_have_text("05-vmap.py")  # edited, still the example
        set_code(page, "print('all mine')\n")
        expect(name).to_have_text("snippet.py")
        assert_accessible(page, f"an example replaced at {size} in {lang}")
        shoot(page, f"example-replaced-{size}-{lang}")
