"""A notebook's ways in and out, and what it keeps: a signed-in person's notebook saved on the site
(made at its first words, saved with its version, a conflict that loses nothing), Import and
Export of .ipynb files, Alt+Enter, a shared snippet opened as a notebook, and Markdown cells that
never run what they say."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from playwright.sync_api import Browser, Page, expect

from .playground import SCREENS
from .test_notebook import cell, code_then_markdown, create_link, edit, new_page, open_notebook, wait_finished

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTEBOOK_URL = re.compile(r"/notebooks/([0-9a-f-]{36})$")


@pytest.fixture
def nb(browser: Browser, live_stack) -> Page:
    page = new_page(browser, live_stack)
    open_notebook(page)
    yield page
    errors = page.errors
    page.context.close()
    assert errors == [], f"uncaught errors on the page: {errors}"


@pytest.fixture
def signed_in(browser: Browser, live_stack) -> Page:
    """A signed-in person's new notebook."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user("ada", password="engine-1843-notes")
    client = Client()
    client.force_login(user)
    page = new_page(browser, live_stack)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_stack.url}])
    open_notebook(page)
    yield page
    errors = page.errors
    page.context.close()
    assert errors == [], f"uncaught errors on the page: {errors}"


def csrf(page: Page) -> dict[str, str]:
    return {"X-CSRFToken": next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")}


def server_copy(page: Page, notebook_id: str) -> dict:
    answer = page.request.get(f"/api/notebooks/{notebook_id}")
    assert answer.ok, answer.text()
    return answer.json()


def wait_server_source(page: Page, notebook_id: str, i: int, source: str) -> dict:
    """Polls the API until cell ``i`` of the server's copy is ``source``: the copy."""
    for _ in range(60):
        copy = server_copy(page, notebook_id)
        if len(copy["cells"]) > i and copy["cells"][i]["source"] == source:
            return copy
        page.wait_for_timeout(250)
    raise AssertionError(f"the server never got {source!r}: {server_copy(page, notebook_id)['cells']}")


def test_a_signed_in_person_s_notebook_is_saved_on_the_site_and_a_conflict_loses_nothing(signed_in: Page):
    page = signed_in
    expect(page.locator("#save-state")).to_have_text("Saved")
    assert page.url.endswith("/notebooks/new")

    # The first words make the notebook on the server: the address becomes its own.
    edit(page, 0, "first = 1\n")
    page.wait_for_url(NOTEBOOK_URL, timeout=15_000)
    notebook_id = NOTEBOOK_URL.search(page.url)[1]
    expect(page.locator("#save-state")).to_have_text("Saved")
    made = wait_server_source(page, notebook_id, 0, "first = 1\n")
    assert made["version"] == 1

    # A later edit is saved over it, with the version it was based on.
    page.locator("#notebook-title").fill("Saved on the site")
    edit(page, 0, "first = 2\n")
    saved = wait_server_source(page, notebook_id, 0, "first = 2\n")
    for _ in range(40):
        saved = server_copy(page, notebook_id)
        if saved["title"] == "Saved on the site":
            break
        page.wait_for_timeout(250)
    assert saved["title"] == "Saved on the site"
    assert saved["version"] >= 2
    expect(page.locator("#save-state")).to_have_text("Saved")

    # Changed through the API: a reload shows the server's copy, not the browser's older one.
    answer = page.request.put(f"/api/notebooks/{notebook_id}", headers=csrf(page), data={
        "cells": [{"id": saved["cells"][0]["id"], "type": "code", "source": "first = 3  # from the API\n"}],
        "version": saved["version"]})
    assert answer.ok, answer.text()
    version = answer.json()["version"]
    assert version == saved["version"] + 1
    open_notebook(page, f"/notebooks/{notebook_id}")
    assert page.evaluate("window.notebook.code(0)") == "first = 3  # from the API\n"
    expect(page.locator("#notebook-title")).to_have_value("Saved on the site")
    expect(page.locator("#notebook-notice")).to_be_hidden()

    # Changed elsewhere meanwhile: the page's save is refused (409), and it says so, keeping the text.
    answer = page.request.put(f"/api/notebooks/{notebook_id}", headers=csrf(page), data={
        "cells": [{"id": saved["cells"][0]["id"], "type": "code", "source": "theirs = 4\n"}],
        "version": version})
    assert answer.ok, answer.text()
    mine = "mine = 5  # typed on this page\n"
    edit(page, 0, mine)
    expect(page.locator("#save-state")).to_have_text("Changed elsewhere", timeout=15_000)
    notice = page.locator("#notebook-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("saved from another page")
    keep = notice.get_by_role("button", name="Keep mine")
    expect(keep).to_be_visible()
    assert page.evaluate("window.notebook.code(0)") == mine
    assert server_copy(page, notebook_id)["cells"][0]["source"] == "theirs = 4\n"
    # The browser's copy holds what was typed, not yet synced. It is written 0.2 s after the
    # last keystroke, later on a loaded machine: waited for, up to 10 s.
    page.wait_for_function(
        "(args) => Object.keys(localStorage).some(k => k.includes(args[0])"
        " && localStorage.getItem(k).includes(args[1]))",
        arg=[notebook_id, mine.strip()], timeout=10_000)
    copies = page.evaluate("Object.fromEntries(Object.keys(localStorage).map(k => [k, localStorage.getItem(k)]))")
    kept = [v for k, v in copies.items() if notebook_id in k and mine.strip() in v]
    assert kept, f"the browser kept no copy with the typed text: {list(copies)}"
    page.screenshot(path=SCREENS / "notebook-conflict.png", full_page=True)

    # The typed text survives a reload while the conflict is unresolved, and the edits the browser
    # restores are still based on the version they were typed on: never saved over theirs unasked.
    open_notebook(page, f"/notebooks/{notebook_id}")
    assert page.evaluate("window.notebook.code(0)") == mine
    expect(page.locator("#save-state")).to_have_text("Changed elsewhere", timeout=15_000)
    assert server_copy(page, notebook_id)["cells"][0]["source"] == "theirs = 4\n"

    # Keep mine writes the page's cells over theirs.
    page.locator("#notebook-notice").get_by_role("button", name="Keep mine").click()
    expect(page.locator("#save-state")).to_have_text("Saved", timeout=15_000)
    after = wait_server_source(page, notebook_id, 0, mine)
    assert after["version"] > version + 1


IPYNB = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Imported notes\n", "Some *text*."]},
        {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1,
         "source": "import jax.numpy as jnp\nx = jnp.ones(3)\n",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "dropped\n"}]},
        {"cell_type": "code", "id": "c2", "metadata": {}, "execution_count": None, "source": ["print(x.sum())"],
         "outputs": []},
    ],
}


def test_import_reads_a_notebook_file_and_a_broken_one_loses_nothing(nb: Page):
    page = nb
    page.locator("#notebook-title").fill("Here before")
    edit(page, 0, "here_before = 1\n")
    page.keyboard.press("Escape")

    # Not JSON: a clear error, and the page as it was.
    page.locator("#import-file").set_input_files(
        files=[{"name": "broken.ipynb", "mimeType": "application/json", "buffer": b"{ this is not json"}])
    notice = page.locator("#notebook-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Could not import broken.ipynb")
    expect(notice).to_contain_text(re.compile("json", re.I))
    assert page.locator("#notebook-notice .notice-text").evaluate("e => e.closest('[role]') !== null")
    page.screenshot(path=SCREENS / "notebook-import-broken.png", full_page=True)
    assert page.evaluate("window.notebook.count()") == 1
    assert page.evaluate("window.notebook.code(0)") == "here_before = 1\n"
    expect(page.locator("#notebook-title")).to_have_value("Here before")

    # A notebook file: its cells (outputs dropped), Markdown rendered, what was here one Undo away.
    page.locator("#import-file").set_input_files(
        files=[{"name": "small.ipynb", "mimeType": "application/x-ipynb+json",
                "buffer": json.dumps(IPYNB).encode()}])
    expect(page.locator(".cell")).to_have_count(3)
    assert page.evaluate("window.notebook.types()") == ["markdown", "code", "code"]
    assert page.evaluate("window.notebook.code(0)") == "# Imported notes\nSome *text*."
    assert page.evaluate("window.notebook.code(1)") == "import jax.numpy as jnp\nx = jnp.ones(3)\n"
    assert page.evaluate("window.notebook.code(2)") == "print(x.sum())"
    expect(cell(page, 0).locator(".cell-markdown h3")).to_have_text("Imported notes")
    expect(cell(page, 0).locator(".cell-markdown em")).to_have_text("text")
    expect(page.locator("#cells")).not_to_contain_text("dropped")
    expect(notice).to_contain_text("over the cells that were here")
    page.screenshot(path=SCREENS / "notebook-imported.png", full_page=True)
    notice.get_by_role("button", name="Undo").click()
    expect(page.locator(".cell")).to_have_count(1)
    assert page.evaluate("window.notebook.code(0)") == "here_before = 1\n"
    expect(page.locator("#notebook-title")).to_have_value("Here before")


def test_export_of_a_draft_is_a_valid_nbformat_4_file(nb: Page, tmp_path):
    page = nb
    code_then_markdown(page, "Exported draft", "print('exported', 6 * 7)\n", "## Notes\\nA *Markdown* cell.")
    assert page.evaluate("window.notebook.types()") == ["code", "markdown"]

    with page.expect_download() as info:
        page.locator("#export-button").click()
    download = info.value
    assert download.suggested_filename == "Exported draft.ipynb"
    path = tmp_path / "export.ipynb"
    download.save_as(path)
    text = path.read_text()
    raw = json.loads(text)
    assert raw["nbformat"] == 4
    notebook = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    sources = [(c.cell_type, c.source) for c in notebook.cells]
    assert ("code", "print('exported', 6 * 7)\n") in [(t, s if s.endswith("\n") else s + "\n") for t, s in sources]
    assert ("markdown", "## Notes\nA *Markdown* cell.") in sources
    code = next(c for c in notebook.cells if c.cell_type == "code" and "exported" in c.source)
    # The cell's run goes with it as its output.
    assert any("exported 42" in "".join(o.get("text", "")) for o in code.outputs), code.outputs


def test_alt_enter_runs_the_cell_and_inserts_one_below_in_its_editor(nb: Page):
    page = nb
    page.locator("#add-code").click()
    expect(page.locator(".cell")).to_have_count(2)
    page.evaluate("window.notebook.setCode(1, 'after = 2\\n')")
    edit(page, 0, "print('alt enter')\n")
    page.keyboard.press("Alt+Enter")
    assert wait_finished(page, 0) == "succeeded"
    expect(cell(page, 0).locator("pre.output[id]")).to_contain_text("alt enter")
    # A new, empty cell between the two, its editor focused; the old second cell moved down.
    expect(page.locator(".cell")).to_have_count(3)
    assert page.evaluate("window.notebook.code(1)") == ""
    assert page.evaluate("window.notebook.code(2)") == "after = 2\n"
    expect(cell(page, 1)).to_have_attribute("data-active", "true")
    assert page.evaluate("document.activeElement.closest('.cell') === document.querySelectorAll('.cell')[1]")
    assert page.evaluate("!!document.activeElement.closest('.cell-editor')")
    page.keyboard.type("typed = 3")
    assert page.evaluate("window.notebook.code(1)") == "typed = 3"

    # In command mode too: Alt+Enter on the selected cell.
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Enter")
    assert wait_finished(page, 1) == "succeeded"
    expect(page.locator(".cell")).to_have_count(4)
    assert page.evaluate("window.notebook.code(2)") == ""
    assert page.evaluate("window.notebook.code(3)") == "after = 2\n"
    assert page.evaluate("document.activeElement.closest('.cell') === document.querySelectorAll('.cell')[2]")


HOSTILE = """\
# Hostile <img src=x onerror=alert(1)>

<img src=x onerror=alert(1)> and <script>alert(2)</script>

A [bad link](javascript:alert(3)) and [another](JaVaScRiPt:alert(4)) and
[data](data:text/html,<script>alert(5)</script>).

A <a href="javascript:alert(6)">raw link</a>, an ![image](x" onerror="alert(7)) and a [good link](https://jax.dev).

[Parentheses](https://en.wikipedia.org/wiki/JAX_(software)) stay in a link.
"""


def assert_inert(page: Page, markdown) -> None:
    expect(markdown).to_contain_text("<img src=x onerror=alert(1)>")
    expect(markdown).to_contain_text("<script>alert(2)</script>")
    assert markdown.locator("img, script, iframe, object, embed, svg").count() == 0
    hrefs = markdown.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://jax.dev", "https://en.wikipedia.org/wiki/JAX_(software)"], hrefs
    # A bad link is its words: nothing of its destination is left over.
    expect(markdown).to_contain_text("A bad link and another and")
    expect(markdown.get_by_role("link", name="Parentheses")).to_be_visible()
    expect(markdown).to_contain_text("Parentheses stay in a link.")
    # No attribute anywhere in the cell runs script.
    handlers = markdown.evaluate("""m => [m, ...m.querySelectorAll('*')].flatMap(e => [...e.attributes]
        .filter(a => /^on/i.test(a.name) || /^\\s*(javascript|data):/i.test(a.value))
        .map(a => e.tagName + ' ' + a.name))""")
    assert handlers == []
    # Clicking the bad link's words does nothing either.
    markdown.get_by_text("bad link").click()


def test_markdown_never_runs_what_it_says_here_or_shared(nb: Page):
    page = nb
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.locator("#notebook-title").fill("<img src=x onerror=alert(8)>")
    page.evaluate("code => window.notebook.setCode(0, code)", HOSTILE)
    cell(page, 0).locator(".cell-editor .view-lines").click()
    page.keyboard.press("Escape")
    page.keyboard.press("m")
    page.keyboard.press("Shift+Enter")
    markdown = cell(page, 0).locator(".cell-markdown")
    expect(markdown.locator("h3")).to_contain_text("Hostile")
    assert_inert(page, markdown)
    page.screenshot(path=SCREENS / "notebook-markdown-inert.png", full_page=True)
    # Still the notebook's own page (a signed-out draft's address once it has words).
    assert re.search(r"/notebooks/(new|draft/[0-9a-z]{12})$", page.url), page.url

    url = create_link(page)

    open_notebook(page, url)
    expect(page.locator(".notebook-title-text")).to_have_text("<img src=x onerror=alert(8)>")
    assert page.locator("header img, .notebook-title-text img").count() == 0
    shared = cell(page, 0).locator(".cell-markdown")
    expect(shared.locator("h3")).to_contain_text("Hostile")
    assert_inert(page, shared)
    page.screenshot(path=SCREENS / "notebook-markdown-inert-shared.png", full_page=True)
    page.wait_for_timeout(500)
    assert dialogs == []
    assert re.search(r"/n/[0-9a-z]+$", page.url)


def test_a_shared_snippet_opens_as_a_notebook(nb: Page, live_stack):
    page = nb
    code = "import jax.numpy as jnp\nprint('from the snippet', jnp.arange(3).sum())\n"
    status, snippet = live_stack.post("/api/snippets", {
        "code": code, "title": "Snippet as notebook", "description": "It sums *three* numbers."})
    assert status == 201, snippet
    open_notebook(page, f"/notebooks/new?snippet={snippet['slug']}")
    assert page.evaluate("window.notebook.types()") == ["markdown", "code"]
    assert page.evaluate("window.notebook.code(1)") == code
    header = cell(page, 0).locator(".cell-markdown")
    expect(header.locator("h3")).to_have_text("Snippet as notebook")
    expect(header.locator("em")).to_have_text("three")
    expect(page.locator("#notebook-title")).to_have_value("Snippet as notebook")
    page.screenshot(path=SCREENS / "notebook-from-snippet.png", full_page=True)

    # It runs as any cell does.
    cell(page, 1).locator(".cell-editor .view-lines").click()
    page.keyboard.press("Control+Enter")
    assert wait_finished(page, 1) == "succeeded"
    expect(cell(page, 1).locator("pre.output[id]")).to_contain_text("from the snippet 3")

    # A slug that is no snippet says so, on an empty notebook.
    open_notebook(page, "/notebooks/new?snippet=nosuchsnippet")
    expect(page.locator("#notebook-notice")).to_contain_text("no shared snippet")


def test_completion_in_a_cell_knows_the_code_cells_above_it(nb: Page):
    """A cell's completion, signatures and hover are asked with the code cells above it before its
    own, the position moved past them, so the names earlier cells define are known there."""
    page = nb
    page.locator("#add-markdown").click()
    page.locator("#add-code").click()
    expect(page.locator(".cell")).to_have_count(3)
    page.evaluate("window.notebook.setCode(0, 'def scale(x):\\n    return x * 2')")
    page.evaluate("window.notebook.setCode(1, '# Not *code*')")
    edit(page, 2, "y = sca")
    page.keyboard.press("End")
    with page.expect_request(lambda r: r.url.endswith("/api/analyse") and r.method == "POST") as asked:
        page.keyboard.press("Control+Space")
    body = json.loads(asked.value.post_data)
    assert body["code"] == "def scale(x):\n    return x * 2\ny = sca"  # the Markdown cell is not code
    assert (body["line"], body["column"]) == (3, 8)
