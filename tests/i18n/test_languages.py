"""The language a page, an API error and a socket speak: the browser's Accept-Language on a first
visit, the choice made with the control on every page (a cookie) and, signed in, kept on the
account for every browser; English as before for everyone else."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.utils import translation

from accounts.models import Preferences
from playground.gallery import EXAMPLES_DIR, examples, translations
from snippets.actions import do_create_snippet
from tests import people
from web.languages import scope_language

pytestmark = pytest.mark.django_db

_plain_static_files = people.plain_static_files
_fresh_rate_limits = people.fresh_rate_limits

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.8"}
COOKIE = settings.LANGUAGE_COOKIE_NAME


@pytest.fixture(autouse=True)
def _english_after():
    """Django's test client leaves the last request's language active in the test's thread (a
    server's every request activates its own): the tests after these are not told Chinese."""
    yield
    translation.deactivate()


def html_lang(response) -> str:
    return re.search(r'<html lang="([^"]+)"', response.content.decode()).group(1)


def pressed(response) -> str:
    """The language the page's control says is the current one."""
    html = response.content.decode()
    return re.search(r'value="([^"]+)"\s+aria-pressed="true"', html).group(1)


@pytest.fixture
def snippet():
    made, _ = do_create_snippet(code="import jax\nprint(jax.numpy.ones(3))\n", title="Ones", description="",
                                device="cpu", run=None, parent=None, owner=None)
    return made


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("lin", "lin@example.com", people.PASSWORD)


# Pages -------------------------------------------------------------------------------------------

def test_a_chinese_browser_gets_the_playground_in_chinese(client):
    page = client.get("/", **CHINESE)
    html = page.content.decode()
    assert page.status_code == 200 and html_lang(page) == "zh-Hans"
    assert "运行" in html and "分享这段代码" in html and "正在加载编辑器…" in html
    assert "Loading the editor" not in html and "Share this code" not in html
    assert pressed(page) == "zh-hans"
    # Monaco's own messages in Chinese, before the page's module.
    assert html.index("monaco-nls.zh-cn.js") < html.index('type="module"')
    # The gallery in Chinese, its code as it is.
    gallery = json.loads(re.search(r'<script id="examples-data" type="application/json">(.*?)</script>', html,
                                   re.S).group(1))
    assert gallery == examples("zh-hans") and gallery[0]["title"] == "速度测试"


def test_anyone_else_gets_it_in_english_as_before(client):
    page = client.get("/")
    html = page.content.decode()
    assert html_lang(page) == "en" and pressed(page) == "en"
    assert "Loading the editor…" in html and "Share this code" in html and "monaco-nls" not in html
    assert 'aria-label="Language"' in html and '<span lang="zh-Hans">中文</span>' in html
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="fr-FR,fr").content.decode().count('lang="en"') >= 1


def test_the_snippet_page_speaks_chinese(client, snippet):
    page = client.get(f"/s/{snippet.slug}", **CHINESE)
    html = page.content.decode()
    assert page.status_code == 200 and html_lang(page) == "zh-Hans"
    assert "下载此代码片段" in html and "在 CPU 上以 JAX" in html
    assert re.search(r"<time [^>]*>\d{4}年\d{1,2}月\d{1,2}日</time>", html)
    english = client.get(f"/s/{snippet.slug}").content.decode()
    assert "saved with JAX" in english and "on CPU" in english and "Download this snippet" in english
    assert re.search(r"<time [^>]*>\d{1,2} [A-Z][a-z]{2} \d{4}</time>", english)


def test_an_embed_has_no_control(client, snippet):
    page = client.get(f"/embed/{snippet.slug}", **CHINESE)
    assert html_lang(page) == "zh-Hans" and "在 JAX Playground 中打开" in page.content.decode()
    assert 'name="language"' not in page.content.decode()


def test_the_notebook_pages_speak_chinese(client, user):
    page = client.get("/notebooks/new", **CHINESE)
    html = page.content.decode()
    assert page.status_code == 200 and html_lang(page) == "zh-Hans"
    assert "全部运行" in html and "分享此笔记本" in html and "正在加载笔记本…" in html and pressed(page) == "zh-hans"
    assert "Run all" in client.get("/notebooks/new").content.decode()
    client.force_login(user)
    listed = client.get("/notebooks/", **CHINESE).content.decode()
    assert "我的笔记本" in listed and "新建笔记本" in listed


def test_the_page_not_found_speaks_chinese(client):
    page = client.get("/no-such-page", **CHINESE)
    html = page.content.decode()
    assert page.status_code == 404 and html_lang(page) == "zh-Hans"
    assert "这里什么都没有" in html and "<code>/no-such-page</code>" in html and pressed(page) == "zh-hans"
    assert "monaco-nls" not in html  # a page without an editor
    assert "Nothing here" in client.get("/no-such-page").content.decode()


# The control -------------------------------------------------------------------------------------

def test_the_control_sets_the_cookie_and_goes_back(client, snippet):
    answer = client.post("/language", {"language": "zh-hans", "next": f"/s/{snippet.slug}?x=1"})
    assert answer.status_code == 303 and answer["Location"] == f"/s/{snippet.slug}?x=1"
    cookie = answer.cookies[COOKIE]
    assert cookie.value == "zh-hans" and int(cookie["max-age"]) == settings.LANGUAGE_COOKIE_AGE
    assert cookie["samesite"] == "Lax"
    # The cookie now outranks the browser's own language.
    assert html_lang(client.get(f"/s/{snippet.slug}", HTTP_ACCEPT_LANGUAGE="en-US")) == "zh-Hans"
    assert client.post("/language", {"language": "en", "next": "/"})["Location"] == "/"
    assert html_lang(client.get("/", **CHINESE)) == "en"


@pytest.mark.parametrize("where", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)",
                                   "http://testserver/", "", "s/abc"])
def test_the_control_goes_back_only_to_a_path_of_this_site(client, where):
    answer = client.post("/language", {"language": "zh-hans", "next": where})
    assert answer.status_code == 303 and answer["Location"] == "/"


def test_a_language_the_site_has_not_changes_nothing(client):
    answer = client.post("/language", {"language": "fr", "next": "/"})
    assert answer.status_code == 303 and COOKIE not in answer.cookies
    assert client.get("/language").status_code == 405


def test_the_control_needs_its_csrf_token():
    client = Client(enforce_csrf_checks=True)
    assert client.post("/language", {"language": "zh-hans", "next": "/"}).status_code == 403
    page = client.get("/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    answer = client.post("/language", {"language": "zh-hans", "next": "/", "csrfmiddlewaretoken": token})
    assert answer.status_code == 303


def test_a_signed_in_choice_is_kept_and_applied_in_another_browser(user):
    here = people.client_of(user)
    here.post("/language", {"language": "zh-hans", "next": "/"})
    assert Preferences.objects.get(user=user).language == "zh-hans"

    elsewhere = people.client_of(user)  # signed in, no language cookie, an English browser
    page = elsewhere.get("/", HTTP_ACCEPT_LANGUAGE="en-US")
    assert html_lang(page) == "zh-Hans" and "分享这段代码" in page.content.decode()
    assert page.cookies[COOKIE].value == "zh-hans"
    # The cookie it was given is the browser's own from now on: a choice there is the latest.
    elsewhere.post("/language", {"language": "en", "next": "/"})
    assert html_lang(elsewhere.get("/")) == "en" and Preferences.objects.get(user=user).language == "en"


def test_signed_out_or_without_a_stored_choice_nothing_is_set(client, user):
    assert COOKIE not in client.get("/").cookies
    signed_in = people.client_of(user)
    page = signed_in.get("/", **CHINESE)
    assert html_lang(page) == "zh-Hans" and COOKIE not in page.cookies
    assert not Preferences.objects.filter(user=user).exists()


# API errors --------------------------------------------------------------------------------------

def post_json(client, path, body: str, **headers):
    return client.post(path, body, content_type="application/json", **headers)


def test_api_errors_follow_the_language_with_the_same_fields(client):
    english = post_json(client, "/api/runs", "{not json")
    chinese = post_json(client, "/api/runs", "{not json", **CHINESE)
    assert english.status_code == chinese.status_code == 400
    assert english.json()["error"].startswith("the body is not valid JSON")
    assert chinese.json()["error"].startswith("请求体不是有效的 JSON")
    assert english.json().keys() == chinese.json().keys() == {"error"}

    body = json.dumps({"code": "print(1)", "device": "abacus"})
    english = post_json(client, "/api/runs", body).json()["error"]
    chinese = post_json(client, "/api/runs", body, **CHINESE).json()["error"]
    assert english.startswith("unknown device 'abacus'; choose one of cpu")
    assert chinese.startswith("未知设备 'abacus'；请从 cpu") and "gpu:h200" in chinese


def test_a_json_404_follows_the_language(client):
    assert client.get("/api/runs/nope").json() == {"error": "no such run"}
    assert client.get("/api/runs/nope", **CHINESE).json() == {"error": "没有这次运行"}
    assert client.get("/api/nothing", **CHINESE).json()["error"].startswith("没有这个接口")


def test_a_rate_limit_names_what_it_counts_in_the_language(client, settings):
    settings.SNIPPET_RATE_LIMIT_PER_HOUR = 1
    share = json.dumps({"code": "print(2)"})
    assert post_json(client, "/api/snippets", share).status_code == 201
    english = post_json(client, "/api/snippets", json.dumps({"code": "print(3)"}))
    chinese = post_json(client, "/api/snippets", json.dumps({"code": "print(4)"}), **CHINESE)
    assert english.status_code == chinese.status_code == 429
    assert english.json()["error"].startswith("too many shared snippets: at most 1 an hour; try again in ")
    assert chinese.json()["error"].startswith("分享代码片段次数过多：每小时最多 1 次；请 ")
    assert english.json().keys() == chinese.json().keys() == {"error", "limit", "retry_after"}
    assert chinese.json()["limit"] == "rate"


# Sockets -----------------------------------------------------------------------------------------

def test_a_scope_speaks_its_cookie_then_its_accept_language():
    def scope(*headers):
        return {"headers": [(name.encode(), value.encode()) for name, value in headers]}

    assert scope_language(scope()) == "en"
    assert scope_language(scope(("accept-language", "zh-CN,zh;q=0.9"))) == "zh-hans"
    assert scope_language(scope(("accept-language", "zh-CN"), ("cookie", f"{COOKIE}=en"))) == "en"
    assert scope_language({"cookies": {COOKIE: "zh-hans"}, "headers": []}) == "zh-hans"
    assert scope_language(scope(("cookie", f"{COOKIE}=xx"), ("accept-language", "de"))) == "en"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("headers", "reason"), [
    ([], "no such run"),
    ([(b"accept-language", b"zh-CN,zh;q=0.9")], "没有这次运行"),
    ([(b"accept-language", b"en-US"), (b"cookie", f"{COOKIE}=zh-hans".encode())], "没有这次运行"),
])
async def test_a_socket_closes_in_its_page_language(headers, reason):
    from web.asgi import application

    comm = WebsocketCommunicator(application, f"/ws/runs/{uuid.uuid4()}/", headers=headers)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    closed = await comm.receive_output(5)
    assert closed == {"type": "websocket.close", "code": 4404, "reason": reason}
    await comm.disconnect()


# The gallery -------------------------------------------------------------------------------------

def test_every_example_has_its_chinese_title_and_description():
    english = examples()
    chinese = translations("zh-hans")
    assert sorted(chinese) == sorted(example["slug"] for example in english)
    for example in english:
        twin = chinese[example["slug"]]
        assert twin["title"].strip() and twin["description"].strip(), example["slug"]
        assert twin["title"] != example["title"] and twin["description"] != example["description"], example["slug"]
    # The code in Chinese is its own file (the same code, its comments translated:
    # tests/runner/test_gallery_languages.py).
    assert [e["code"] for e in examples("zh-hans")] == [chinese[e["slug"]]["code"] for e in english]
    assert examples("en") == english and (EXAMPLES_DIR / "zh-hans").is_dir()


def test_the_server_error_page_has_the_control_and_the_language(rf):
    from web import urls
    from web.errors import server_error

    assert urls.handler500 == "web.errors.server_error"
    request = rf.get("/s/abc?x=1")
    with translation.override("zh-hans"):
        page = server_error(request)
    html = page.content.decode()
    assert page.status_code == 500 and html_lang(page) == "zh-Hans" and "我们这边出了问题" in html
    assert 'name="next" value="/s/abc?x=1"' in html and 'name="csrfmiddlewaretoken"' in html
    english = server_error(rf.get("/")).content.decode()
    assert "Something went wrong on our side" in english and 'lang="en"' in english
