"""The account and course pages, their mails and their API in Chinese for a zh-CN browser: each
page says ``<html lang="zh-Hans">`` and has no English left in what the server wrote (code, names
and what people typed aside); the password reset mail is in the language of whoever asked for it;
a grade's messages, stored in English, are shown in the reader's language. Everyone else gets the
pages as before, in English."""

from __future__ import annotations

import json
import re
import uuid
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import translation

from executor.runner import grades
from tests import people

pytestmark = pytest.mark.django_db

_plain_static_files = people.plain_static_files
_fast_password_hashes = people.fast_password_hashes
_fresh_rate_limits = people.fresh_rate_limits

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.8"}
CHECKS = """\
from jaxplay.grading import allclose, check
check("三的平方", allclose(square(3.0), 9.0), points=2)
"""

# What a Chinese page writes in Latin letters: product, format and code names, units, keys.
ALLOWED = {
    "jax", "playground", "numpy", "python", "api", "url", "json", "csv", "markdown", "cpu", "gpu", "tpu", "ruff",
    "ctrl", "shift", "alt", "enter", "token", "bearer", "authorization", "javascript", "websocket", "ci", "iso",
    "english", "null", "true", "false",
}
WORD = re.compile(r"[A-Za-z][A-Za-z'’]*[A-Za-z]")
# Not the page's own words: code, and what the person reads as code.
SKIPPED_TAGS = {"script", "style", "pre", "code", "kbd", "samp", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")


@pytest.fixture(autouse=True)
def _english_after():
    """The test client leaves the last request's language active in the test's thread."""
    yield
    translation.deactivate()


class _Words(HTMLParser):
    """The texts a person reads or hears on a page: text outside code, and the attributes that
    name things. What is marked as not to be translated (a join code) or as English (a guide
    written in English only) is not the page's own words either."""

    def __init__(self):
        super().__init__()
        self.skipped_depth = 0  # elements open since the one that started a skipped part
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if self.skipped_depth:
            self.skipped_depth += tag not in VOID
            return
        if attributes.get("translate") == "no" or (attributes.get("lang") or "").startswith("en") \
                or tag in SKIPPED_TAGS:
            self.skipped_depth = int(tag not in VOID)
            return
        self.texts += [value for name, value in attrs if name in READ_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if self.skipped_depth and tag not in VOID:
            self.skipped_depth -= 1

    def handle_data(self, data):
        if not self.skipped_depth and data.strip():
            self.texts.append(data.strip())


def english_left(html: str, allowed: set[str] = frozenset()) -> list[str]:
    """The page's texts that still hold an English word (code-like words aside)."""
    parser = _Words()
    parser.feed(html)
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    left = []
    for text in [*parser.texts, title.group(1) if title else ""]:
        prose = re.sub(r"\S*[._/@:=()\[\]<>]\S*", " ", text)
        words = [w for w in WORD.findall(prose) if w.lower() not in ALLOWED | allowed and "_" not in w
                 and not any(c.isdigit() for c in w)]
        if words:
            left.append(f"{text[:100]!r} ({', '.join(words[:5])})")
    return sorted(set(left))


def html_lang(response) -> str:
    return re.search(r'<html lang="([^"]+)"', response.content.decode()).group(1)


def assert_chinese(response, *phrases: str, allowed: set[str] = frozenset()) -> str:
    assert response.status_code == 200, response.status_code
    html = response.content.decode()
    assert html_lang(response) == "zh-Hans"
    for phrase in phrases:
        assert phrase in html, phrase
    assert english_left(html, allowed) == []
    # The language control, with Chinese the current one.
    assert re.search(r'value="zh-hans"\s+aria-pressed="true"', html)
    return html


def assert_english(response, *phrases: str) -> str:
    assert response.status_code == 200, response.status_code
    html = response.content.decode()
    assert html_lang(response) == "en"
    for phrase in phrases:
        assert phrase in html, phrase
    return html


def post_json(client, path: str, body, **extra):
    return client.post(path, json.dumps(body), content_type="application/json", **extra)


# People, a course and its assignment, as tests/courses makes them ------------------------------

@pytest.fixture
def teacher(django_user_model):
    return django_user_model.objects.create_user("zhang", "zhang@example.com", people.PASSWORD)


@pytest.fixture
def student(django_user_model):
    return django_user_model.objects.create_user("li", "li@example.com", people.PASSWORD)


@pytest.fixture
def course(teacher, student):
    from courses.actions.courses import do_create_course
    from courses.actions.members import do_join_course

    course = do_create_course(teacher, "JAX 入门")
    do_join_course(course, student)
    return course


@pytest.fixture
def assignment(course):
    from courses.actions.assignments import do_create_assignment

    return do_create_assignment(course, title="平方", description="写一个 `square(x)`。",
                                starter_code="def square(x):\n    ...\n", checks=CHECKS, device="cpu")


NAMES = {"zhang", "li"}
# The names of libraries, formats and units the checks guide writes as they are.
GUIDE_NAMES = {"nan", "xla", "stablehlo", "jaxpr", "pytree", "mib", "scipy", "optax", "flax", "equinox", "chex",
               "einops", "matplotlib"}


# Account pages ----------------------------------------------------------------------------------

def test_the_sign_in_and_sign_up_pages_speak_chinese(client):
    assert_chinese(client.get("/accounts/login/", **CHINESE), "<title>登录 · JAX Playground</title>", "忘记密码？",
                   "用户名", "密码")
    assert_chinese(client.get("/accounts/signup/", **CHINESE), "创建账户", "选填。仅用于重置忘记的密码。", "密码确认")
    assert_chinese(client.get("/accounts/password_reset/", **CHINESE), "重置你的密码", "发送链接")

    assert_english(client.get("/accounts/login/"), "<title>Sign in · JAX Playground</title>", "Forgot your password?")
    assert_english(client.get("/accounts/signup/"), "Optional. Only used to reset a forgotten password.",
                   "Create account")


def test_djangos_own_refusals_come_in_chinese(client, student):
    page = client.post("/accounts/signup/", {"username": "wang", "password1": "short", "password2": "other"},
                       **CHINESE)
    assert "输入的两个密码不一致" in page.content.decode() and "请检查下面的字段。" in page.content.decode()
    page = client.post("/accounts/signup/", {"username": "wang", "password1": "1234", "password2": "1234"},
                       **CHINESE)
    html = page.content.decode()
    assert "此密码太短" in html and ("密码只包含数字" in html or "不能全都是数字" in html)
    page = client.post("/accounts/login/", {"username": "li", "password": "wrong password"}, **CHINESE)
    assert "请输入一个正确的用户名和密码" in page.content.decode()
    english = client.post("/accounts/login/", {"username": "li", "password": "wrong password"}).content.decode()
    assert "Please enter a correct username and password" in english


def test_a_refusal_of_ours_on_a_page_is_a_chinese_sentence(settings):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1

    def sign_up(name: str):
        return Client().post("/accounts/signup/", {"username": name, "password1": people.PASSWORD,
                                                   "password2": people.PASSWORD}, **CHINESE)

    assert sign_up("wang").status_code == 302
    refused = sign_up("zhou")
    assert refused.status_code == 429
    assert re.search(r"<p>[^<]*每小时最多 1 次[^<]*请使用课程的加入链接[^<]*。</p>", refused.content.decode())


def test_the_signed_in_pages_speak_chinese(student):
    from snippets.actions import do_create_snippet

    do_create_snippet(code="print('你好')\n", title="", description="", device="cpu", run=None, parent=None,
                      owner=student)
    client = people.client_of(student)
    html = assert_chinese(client.get("/accounts/", **CHINESE), "<h1>账户</h1>", "API 令牌", "创建令牌",
                          "永不过期（直到撤销）", allowed=NAMES)
    assert "退出登录" in html and "我的代码片段" in html
    assert_chinese(client.get("/me/snippets/", **CHINESE), "<h1>我的代码片段</h1>", "搜索标题、描述、代码",
                   allowed=NAMES)
    assert_chinese(client.get("/me/runs/", **CHINESE), "<h1>我的运行</h1>", "还没有运行。", allowed=NAMES)
    assert_chinese(client.get("/accounts/password_change/", **CHINESE), "修改密码", "旧密码", allowed=NAMES)

    assert_english(client.get("/accounts/"), "<h1>Account</h1>", "Never (until revoked)", "Sign out")
    assert_english(client.get("/me/snippets/"), "<h1>My snippets</h1>", "Search title, description, code")
    assert_english(client.get("/me/runs/"), "<h1>My runs</h1>", "No runs yet.")


def test_my_runs_words_a_runs_status_and_its_date_in_chinese(student):
    from playground.actions.runs import do_start_run

    run = do_start_run("print(1)\n", "cpu", owner=student)
    client = people.client_of(student)
    html = assert_chinese(client.get("/me/runs/", **CHINESE), 'aria-label="取消运行 print(1)"', allowed=NAMES)
    assert re.search(r'<span class="status status-queued" tabindex="-1">排队中</span>', html)
    assert re.search(r"<time [^>]*>\d{4}年\d{1,2}月\d{1,2}日 \d{2}:\d{2}</time>", html)
    english = assert_english(client.get("/me/runs/"), 'aria-label="Cancel run print(1)"')
    assert re.search(r'<span class="status status-queued" tabindex="-1">queued</span>', english)
    assert re.search(r"<time [^>]*>\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}</time>", english)
    assert run.status == "queued"


def test_the_account_pages_messages_come_in_chinese(student):
    client = people.client_of(student)
    page = client.post("/accounts/email/", {"email": ""}, follow=True, **CHINESE)
    assert "邮箱已移除" in page.content.decode()
    page = client.post("/accounts/tokens/", {"name": "笔记本"}, follow=True, **CHINESE)
    html = page.content.decode()
    assert "令牌已创建" in html and "你的新令牌“笔记本”：" in html
    english = client.post("/accounts/tokens/", {"name": "laptop"}, follow=True).content.decode()
    assert "Token created" in english and "Your new token “laptop”:" in english


# The password reset mail ------------------------------------------------------------------------

def test_the_password_reset_mail_is_in_the_language_of_whoever_asked(client, student, mailoutbox):
    answer = client.post("/accounts/password_reset/", {"email": "li@example.com"}, **CHINESE)
    assert answer.status_code == 302
    client.post("/accounts/password_reset/", {"email": "li@example.com"})
    chinese, english = mailoutbox
    assert chinese.subject == "重置你的 JAX Playground 密码"
    assert "有人（希望是你本人）申请重置 JAX Playground 账户“li”的密码。" in chinese.body
    assert "请在这里设置新密码：" in chinese.body and "/accounts/reset/" in chinese.body
    assert "ignore this email" not in chinese.body
    assert english.subject == "Reset your JAX Playground password"
    assert 'asked to reset the password of the JAX Playground account "li".' in english.body
    assert "Choose a new password here:" in english.body and "请" not in english.body


# Course pages -----------------------------------------------------------------------------------

def test_the_courses_list_speaks_chinese(student, course):
    client = people.client_of(student)
    assert_chinese(client.get("/courses/", **CHINESE), "<h1>课程</h1>", "你的课程", "加入课程", "0 个作业",
                   allowed=NAMES)
    assert_english(client.get("/courses/"), "<h1>Courses</h1>", "Your courses", "0 assignments")


def test_a_course_speaks_chinese_to_its_student_and_its_teacher(student, teacher, course, assignment):
    page = people.client_of(student).get(f"/courses/{course.pk}/", **CHINESE)
    assert_chinese(page, "<h1>JAX 入门</h1>", "未提交", "2 分", "无截止时间", allowed=NAMES)
    page = people.client_of(teacher).get(f"/courses/{course.pk}/", **CHINESE)
    html = assert_chinese(page, "实时看板", "加入码", "1 名教师，1 名学生", "已提交 0 / 1", allowed=NAMES)
    assert "从课程中移除 li" in html
    english = assert_english(people.client_of(teacher).get(f"/courses/{course.pk}/"), "Live dashboard",
                             "1 instructor, 1 student", "0 of 1 submitted", "2 points")
    assert "Remove li from the course" in english


def test_an_assignment_speaks_chinese(student, teacher, assignment):
    page = people.client_of(student).get(f"/assignments/{assignment.pk}/", **CHINESE)
    html = assert_chinese(page, "<span>提交</span>", "你的代码", "正在加载编辑器…", 'aria-label="作业、提交和结果"',
                          allowed=NAMES)
    assert "monaco-nls.zh-cn.js" in html  # a page with an editor: Monaco's own words too
    page = people.client_of(teacher).get(f"/assignments/{assignment.pk}/", **CHINESE)
    assert_chinese(page, "隐藏检查项", "参考答案", "全部重新评分", allowed=NAMES)
    assert_english(people.client_of(student).get(f"/assignments/{assignment.pk}/"), "<span>Submit</span>",
                   "Loading the editor…", 'aria-label="Assignment, submissions and results"')


def test_the_checks_guide_and_the_dashboard_speak_chinese(teacher, course, assignment):
    client = people.client_of(teacher)
    html = assert_chinese(client.get("/courses/checks", **CHINESE), "<title>编写隐藏检查项 · JAX Playground</title>",
                          allowed=NAMES | GUIDE_NAMES)
    assert "monaco-nls" not in html
    # The guide's Chinese twin (docs/CHECKS.zh-CN.md, held to the English by test_checks_guide.py).
    assert "本指南目前只有英文版。" not in html and '<article class="sheet markdown checks-guide">' in html
    assert_chinese(client.get(f"/courses/{course.pk}/dashboard", **CHINESE), "<h1>实时看板</h1>", "连接中…",
                   "最常见的错误", allowed=NAMES)
    assert_english(client.get("/courses/checks"), "<title>Writing hidden checks · JAX Playground</title>")
    assert_english(client.get(f"/courses/{course.pk}/dashboard"), "<h1>Live dashboard</h1>", "Connecting…")


def test_the_join_link_speaks_chinese(course, django_user_model):
    stranger = people.client_of(django_user_model.objects.create_user("zhao", password=people.PASSWORD))
    assert_chinese(stranger.get(f"/courses/join/{course.join_code}", **CHINESE), "你受邀加入一门课程", "加入课程",
                   allowed={"zhao"})
    assert_chinese(Client().get(f"/courses/join/{course.join_code}", **CHINESE), "登录并加入")
    assert_chinese(Client().get(f"/courses/join/{course.join_code}/signup", **CHINESE),
                   "加入 <strong>JAX 入门</strong>")


# The course API ---------------------------------------------------------------------------------

def test_a_course_api_error_follows_the_language(client, teacher, course):
    assert client.get("/api/courses", **CHINESE).json()["error"].startswith("请先登录")
    assert client.get("/api/courses").json()["error"].startswith("sign in")
    teaching = people.client_of(teacher)
    english = post_json(teaching, "/api/courses", {"title": " "})
    chinese = post_json(teaching, "/api/courses", {"title": " "}, **CHINESE)
    assert english.status_code == chinese.status_code == 400
    assert english.json() == {"error": "'title' must not be empty"}
    assert chinese.json() == {"error": "'title' 不能为空"}
    assert teaching.get("/api/courses/999999", **CHINESE).json() == {"error": "没有这门课程"}
    broken = {"checks": "def f(:\n"}
    assignment = post_json(teaching, f"/api/courses/{course.pk}/assignments", {"title": "平方", **broken}, **CHINESE)
    assert assignment.status_code == 422
    assert re.fullmatch(r"检查项不是有效的 Python：.+（第 1 行第 \d+ 列）", assignment.json()["error"])


def test_the_grades_csv_names_its_columns_in_the_language(teacher, course, assignment):
    client = people.client_of(teacher)
    chinese = client.get(f"/api/courses/{course.pk}/grades.csv", **CHINESE).content.decode().splitlines()[0]
    assert chinese == "username,name,email,平方（最新评分，满分 2）,总分（满分 2）"
    english = client.get(f"/api/courses/{course.pk}/grades.csv").content.decode().splitlines()[0]
    assert english == 'username,name,email,"平方 (latest graded, of 2)",total (of 2)'


# A grade's words --------------------------------------------------------------------------------

DECLARED = [{"name": "三的平方", "points": 2.0}, {"name": "形状", "points": 1.0}]
REPORTED = [{"name": "三的平方", "passed": True, "points": 2}]


@pytest.mark.parametrize("outcome, status", [
    (grades.OUTCOME_NOT_RUN, "failed"), (grades.OUTCOME_NOT_RUN, "timed_out"), (grades.OUTCOME_NOT_RUN, "lost"),
    (grades.OUTCOME_NOT_RUN, "limit_exceeded"), (grades.OUTCOME_NOT_RUN, "cancelled"),
    (grades.OUTCOME_NOT_RUN, "succeeded"), (grades.OUTCOME_INCOMPLETE, "succeeded"),
    (grades.OUTCOME_INTERFERED, "succeeded"), (grades.OUTCOME_CHECKED, "failed"),
])
def test_every_message_a_grade_writes_is_shown_in_chinese(outcome, status):
    from courses.feedback import shown

    grade = grades.grade(REPORTED, DECLARED, outcome=outcome, student_status=status)
    messages = [grade["message"], *(c["message"] for c in grade["checks"])]
    assert any(messages)
    with translation.override("zh-hans"):
        chinese = [shown(m) for m in messages]
    for english, words in zip(messages, chinese):
        assert shown(english) == english  # English as stored
        if english:
            assert words != english and not re.search(r"[A-Za-z]{3,}", words), (english, words)


def test_a_crashed_check_and_a_lost_result_are_shown_in_chinese():
    from courses.feedback import shown

    crashed = grades.grade([{"name": "形状", "passed": False, "crashed": True}], DECLARED,
                           outcome=grades.OUTCOME_CHECKED, student_status="succeeded")
    with translation.override("zh-hans"):
        assert shown(crashed["message"]).startswith("暂定评分：")
        assert shown(grades.CHECK_CRASHED_MESSAGE) == "此检查项未能运行；已通知你的教师"
        assert shown("No result: the grading run ended lost (the executor stopped); submit again") == (
            "没有结果：评分运行以“已丢失”结束（the executor stopped）；请重新提交")
        assert shown("No result: the grading run ended cancelled; submit again") == (
            "没有结果：评分运行以“已取消”结束；请重新提交")
        # What a check's author wrote is theirs.
        assert shown("wrong: expected 9.0") == "wrong: expected 9.0"


def test_a_submissions_messages_are_stored_in_english_and_read_in_the_readers_language(student, teacher,
                                                                                        assignment):
    from courses.grading import do_record_grade, queue_grading
    from courses.models import Submission

    submission = Submission.objects.create(assignment=assignment, student=student, code="def square(x):\n    1/0\n")
    grading = queue_grading(submission, assignment, run_id=uuid.uuid4(), priority=0)
    do_record_grade(str(grading.run_id), {"checks": [], "outcome": grades.OUTCOME_NOT_RUN,
                                          "student_status": "failed"})
    submission.refresh_from_db()
    assert submission.message == "Your code raised an exception; the checks it did not reach count as failed"
    path = f"/api/submissions/{submission.pk}"
    chinese = people.client_of(student).get(path, **CHINESE).json()
    assert chinese["message"] == "你的代码抛出了异常；未执行到的检查项计为未通过"
    assert chinese["checks"][0]["message"] == "未执行到：你的代码抛出了异常"
    assert chinese["status"] == "graded"  # field and status names stay as they are
    english = people.client_of(teacher).get(path).json()
    assert english["message"] == submission.message
    assert english["checks"][0]["message"] == "not reached: your code raised an exception"


# The dashboard's socket -------------------------------------------------------------------------

def _session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("language", "reason"), [(b"zh-CN,zh;q=0.9", "没有这门课程"), (b"en-US", "no such course")])
async def test_the_dashboard_socket_refuses_in_the_pages_language(student, course, language, reason):
    from web.asgi import application

    cookie = await sync_to_async(_session_cookie)(student)
    comm = WebsocketCommunicator(application, f"/ws/courses/{course.pk}/",
                                 headers=[(b"origin", b"http://127.0.0.1"), cookie, (b"accept-language", language)])
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    assert await comm.receive_output(5) == {"type": "websocket.close", "code": 4404, "reason": reason}
    await comm.disconnect()
