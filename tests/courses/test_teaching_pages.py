"""The pages that teach an instructor about checks agree with each other and with the code: one
sentence says where checks run (the checker, executor/graded_run.py and runner/checker.py: a runner
of its own that no student code runs in), the same in the authoring form, the new assignment's
check template and the guide at /courses/checks, in English and Chinese; the guide is public; a
join link's sign-in names the course and offers an account first."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
SENTENCE = {
    "en": "The checks run after the student's code, in a process of their own: the checker, a sandboxed "
          "runner that no student code ever runs in.",
    "zh": "检查项在学生的代码之后运行，运行在单独的进程里：检查器，一个从不运行任何学生代码的沙箱运行器。",
}
# What the pages said before, each of them wrong: checks never run in the student's sandbox.
WRONG = ("same sandbox, with", "in its sandbox", "同一沙箱中运行")


def text(response) -> str:
    """A page's words, tags gone and spaces (line breaks of the Markdown) folded."""
    html = response.content.decode()
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", html)))


def test_the_guide_is_public_in_both_languages():
    for headers, sentence in (({}, SENTENCE["en"]), (CHINESE, SENTENCE["zh"])):
        response = Client().get("/courses/checks", **headers)
        assert response.status_code == 200
        words = text(response)
        assert sentence in words
        assert not any(wrong in words for wrong in WRONG)


def test_the_authoring_form_says_the_guides_sentence(instructor_client, assignment):
    for headers, sentence in (({}, SENTENCE["en"]), (CHINESE, SENTENCE["zh"])):
        words = text(instructor_client.get(f"/assignments/{assignment.pk}/", **headers))
        assert sentence in words
        assert not any(wrong in words for wrong in WRONG)


def test_the_check_template_says_it_too_and_links_the_guide_page():
    source = (ROOT / "frontend/src/pages/courses.ts").read_text()
    assert f't("{SENTENCE["en"]}")' in source
    assert "docs/CHECKS.md" not in source.split("function checksTemplate")[1].split("\n}\n")[0]
    assert "/courses/checks" in source
    catalogue = json.loads((ROOT / "frontend/src/i18n/zh-hans/courses.json").read_text())
    assert catalogue[SENTENCE["en"]] == SENTENCE["zh"]


# What the assignment page says while it grades, and to a student of their submissions: short forms
# of the sentence, each naming the checker, where "graded in the sandbox" left open which one.
GRADING = {
    "frontend/src/assignment/submissions.ts": (
        "Every submission is kept and graded: your code runs first, then the checks run in the checker, a "
        "sandboxed runner that your code never runs in. Submit as often as you like.",
        "Grading: the code runs, then the checks in the checker…",
    ),
    "frontend/src/assignment/validation.ts": ("Grading: the code runs, then the checks as saved, in the checker…",),
}


def test_what_the_assignment_page_says_of_grading_names_the_checker_in_both_languages():
    catalogue = json.loads((ROOT / "frontend/src/i18n/zh-hans/courses.json").read_text())
    for path, strings in GRADING.items():
        source = (ROOT / path).read_text()
        assert "in the sandbox" not in source, path
        for english in strings:
            assert f't("{english}")' in source, (path, english)
            assert "检查器" in catalogue[english], english
    assert not [key for key in catalogue if "in the sandbox" in key]
    assert not [value for value in catalogue.values() if "在沙箱中" in value]


def test_a_join_links_sign_in_names_the_course_and_offers_an_account_first(course):
    client = Client()
    response = client.get(f"/accounts/login/?next={course.join_url}")
    assert response.status_code == 302
    assert response["Location"].startswith(f"{course.join_url}/signin?next=")
    page = client.get(f"{course.join_url}/signin").content.decode()
    assert "JAX 101" in page
    account, form = page.index('id="join-signin-signup"'), page.index('<form method="post"')
    assert account < form  # the account first
    assert f'href="{course.join_url}/signup"' in page
    assert f'action="{course.join_url}/signin"' in page
    # The join page itself offers an account first, then the course's own sign-in.
    join = client.get(course.join_url).content.decode()
    assert join.index('id="join-sign-up"') < join.index('id="join-sign-in"')
    assert f'href="{course.join_url}/signin"' in join


def test_signing_in_there_comes_back_to_the_join_link(course, outsider):
    from tests.people import PASSWORD

    client = Client()
    response = client.post(f"{course.join_url}/signin", {"username": "otto", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == course.join_url
    page = client.get(course.join_url).content.decode()
    assert 'id="join-button"' in page


def test_a_code_naming_no_course_gets_a_plain_sign_in_still_back_to_the_link():
    page = Client().get("/courses/join/ZZZZZZZZ/signin").content.decode()
    assert 'id="join-signin-signup"' not in page and '<h1>Sign in</h1>' in page
    assert 'name="next" value="/courses/join/ZZZZZZZZ"' in page


def test_a_plain_sign_in_is_left_as_it_was():
    response = Client().get("/accounts/login/?next=/courses/")
    assert response.status_code == 200 and 'id="join-signin-signup"' not in response.content.decode()
