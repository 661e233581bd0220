"""Screenshots of every page at the three sizes people use (1440x900, 1024x768, 390x844), light,
and the playground dark too, into docs/screens/ (docs/SCREENS.md shows them).

    python -m bench.screens              # starts its own stack; about two minutes

Each page is shown in a state worth looking at: the playground after a run that printed (with
colours), compiled, timed and drew; a shared snippet with its saved output; its embed; the
shortcuts panel; the drafts menu; a recompilation's reason in Compiled; a comparison of JAX 0.4.38
and the default (its Output, the Compiled diff, the Timing table); the Share dialog offering
a fork its own title; a course's join link and the sign-up it leads to (signed out); a
signed-in person's snippets and runs (one queued and one running, each with Cancel); a course's
live dashboard and page (its instructor) and an assignment with a graded submission (a student).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.first_paint import CHROMIUM, CHROMIUM_ARGS
from bench.stack import ROOT, own_stack

OUT = ROOT / "docs" / "screens"
SIZES = {"wide": (1440, 900), "laptop": (1024, 768), "phone": (390, 844)}
CODE = """\
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

def f(x):
    return jnp.tanh(x) ** 2

x = jnp.linspace(-3, 3, 200)
print("\\x1b[32mok\\x1b[0m  f(0) =", f(0.0), "  f'(1) =", jax.grad(f)(1.0))
%timeit jax.jit(f)(x).block_until_ready()
plt.plot(x, f(x), label="f")
plt.plot(x, jax.vmap(jax.grad(f))(x), label="f'")
plt.legend()
plt.show()
"""
# f compiled twice, the second time for a new shape: Compiled says why, naming the argument x.
RECOMPILED = """\
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return jnp.tanh(x) * 2.0

f(jnp.ones(3))
f(jnp.ones((2, 4)))  # new shape
"""

# The same code on the last 0.4 and the default, compared: what changed in the jaxpr and the times.
COMPARED = """\
import jax
import jax.numpy as jnp

@jax.jit
def loss(w, x):
    return jnp.mean(jnp.tanh(x @ w) ** 2)

w, x = jnp.ones((64, 16)), jnp.ones((256, 64))
print("jax", jax.__version__, "loss", loss(w, x))
%timeit jax.grad(loss)(w, x).block_until_ready()
"""
OLD = "jax-0.4.38"


def post_json(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def ready(page) -> None:
    page.wait_for_function("() => window.playground && document.querySelector('#editor .monaco-editor')")


def finished(page) -> None:
    page.wait_for_function(
        "() => ['succeeded', 'failed'].includes(document.querySelector('#run-status').dataset.status)",
        timeout=120_000)


PERSON = """\
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from executor import events as ev
from playground.models import Run, RunEvent
from playground.redis import get_redis
from snippets.actions import do_create_snippet
user, _ = get_user_model().objects.get_or_create(username="ada")
do_create_snippet(code="print(1)\\n", title="Ada notes", description="", device="cpu", run=None, parent=None,
                  owner=user)
# Her runs as My runs lists them, newest first: two ended, one running and one queued behind a long
# queue. Made here and never sent to an executor, so that both stay as they are for the picture:
# a pulse of their own keeps the watchdog from taking them for lost.
now = timezone.now()
for code, status in (("import jax\\nprint(jax.devices())\\n", "succeeded"),
                     ("x = jnp.ones(3)\\nprint(x @ jnp.ones(4))\\n", "failed"),
                     ("params = train(params, steps=20_000)\\n", "running"),
                     ("%timeit big_matmul(x).block_until_ready()\\n", "queued")):
    run = Run.objects.create(code=code, device="cpu", owner=user, status=status,
                             started_at=None if status == "queued" else now,
                             finished_at=now if status in ("succeeded", "failed") else None)
    RunEvent.objects.create(run=run, seq=1, type="queued", data={"seq": 1, "type": "queued", "position": 1})
    if not run.is_finished:
        get_redis().set(ev.alive_key(str(run.id)), "screens", ex=3600)
c = Client(); c.force_login(user); print(c.cookies["sessionid"].value)
"""


def session_cookie(env: dict, url: str) -> dict:
    """A signed-in person (ada) with a snippet of her own and four runs: her session cookie."""
    done = subprocess.run([sys.executable, "-c", PERSON], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return {"name": "sessionid", "value": done.stdout.strip().splitlines()[-1], "url": url}


COURSE = """\
import django, json, time
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from courses.actions.assignments import check_create_assignment
from courses.actions.courses import do_create_course
from courses.actions.members import do_join_course
from courses.actions.submissions import do_start_course_run, do_submit
User = get_user_model()
ines, _ = User.objects.get_or_create(username="ines")
course = do_create_course(ines, "JAX 101")
checks = ("from jaxplay.grading import allclose, check\\nimport numpy as np\\n"
          "check('square of 3', allclose(square(3.0), 9.0), 2)\\n"
          "check('keeps the shape', allclose(square(np.ones(3)), np.ones(3)))\\n")
squares = check_create_assignment(course, {"title": "Squares", "checks": checks,
    "description": "Write **square(x)**, which squares `x` elementwise.",
    "starter_code": "import jax.numpy as jnp\\n\\ndef square(x):\\n    ...\\n"})
grads = check_create_assignment(course, {"title": "Gradients with jax.grad", "checks": checks,
    "description": "Use `jax.grad`.", "starter_code": "import jax\\n"})
right = "import jax.numpy as jnp\\ndef square(x):\\n    return x * x\\n"
half = "import jax.numpy as jnp\\ndef square(x):\\n    return jnp.abs(x) * 3\\n"
broken = "import jax.numpy as jnp\\ndef square(x):\\n    return x / 0\\nprint(square(1))\\n"
for i, name in enumerate(["ada", "alan", "barbara", "claude", "donald", "edsger", "grace", "john"]):
    student, _ = User.objects.get_or_create(username=name)
    do_join_course(course, student)
    do_start_course_run(squares, student, [right, broken, half][i % 3])
    do_submit(squares, student, [right, half, broken][i % 3])
    if i % 2 == 0:
        do_submit(grads, student, right)
ada = User.objects.get(username="ada")
cookies = {}
for who in (ines, ada):
    c = Client(); c.force_login(who); cookies[who.username] = c.cookies["sessionid"].value
print(json.dumps({"course": course.pk, "join_code": course.join_code, "assignment": squares.pk, "cookies": cookies}))
"""


def course_people(env: dict) -> dict:
    """A course (JAX 101) taught by ines, eight students who ran and submitted: its ids and the
    session cookies of ines and of ada, a student."""
    done = subprocess.run([sys.executable, "-c", COURSE], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with own_stack("screens") as stack, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The shared snippet keeps the output of a run of its code, as one shared after a run does.
        _, run = stack.post("/api/runs", {"code": CODE})
        stack.wait_finished(run["id"], timeout=180)
        slug = post_json(f"{stack.url}/api/snippets", {
            "code": CODE, "title": "tanh squared and its derivative", "run": run["id"],
            "description": "`f`, its gradient through `vmap`, and how long the jitted `f` takes."})["slug"]
        cookie = session_cookie(stack.env, stack.url)
        course = course_people(stack.env)
        stack.start_executor("old-jax", EXECUTOR_RUNTIME=OLD, EXECUTOR_CONCURRENCY="1", EXECUTOR_POOL_SIZE="1")
        stack.wait_runtime(OLD)
        compared = post_json(f"{stack.url}/api/comparisons", {
            "code": COMPARED, "sides": [{"runtime": OLD}, {"runtime": None}]})
        for side in compared["sides"]:
            stack.wait_finished(side["run"]["id"], timeout=180)

        def as_person(context, name: str) -> None:
            context.clear_cookies()
            context.add_cookies([{"name": "sessionid", "value": course["cookies"][name], "url": stack.url}])

        def shoot(name: str, size: str, theme: str, page, full_page: bool = False) -> None:
            """The viewport; ``full_page`` for a page that scrolls as a whole (a form, say), so that
            its end is in the picture too."""
            path = OUT / f"{name}-{size}-{theme}.png"
            page.screenshot(path=path, full_page=full_page)
            shots.append(path)

        for theme in ("light", "dark"):
            for size, (width, height) in SIZES.items():
                if theme == "dark" and size != "wide":
                    continue
                context = browser.new_context(base_url=stack.url, viewport={"width": width, "height": height},
                                              color_scheme=theme, reduced_motion="reduce")
                page = context.new_page()
                page.goto("/")
                ready(page)
                page.evaluate("code => window.playground.setCode(code)", CODE)
                page.keyboard.press("Control+Enter")
                finished(page)
                shoot("playground", size, theme, page)
                if theme == "dark":
                    context.close()
                    continue
                page.evaluate("() => window.playground.selectTab('compiled')")
                page.wait_for_timeout(500)
                shoot("compiled", size, theme, page)
                page.evaluate("() => window.playground.selectTab('figures')")
                page.wait_for_timeout(300)
                shoot("figures", size, theme, page)
                page.keyboard.press("F1")
                page.wait_for_timeout(200)
                shoot("shortcuts", size, theme, page)
                page.keyboard.press("Escape")
                page.evaluate("code => window.playground.setCode(code)", RECOMPILED)
                page.keyboard.press("Control+Enter")
                finished(page)
                page.evaluate("() => window.playground.selectTab('compiled')")
                page.locator("#panel-compiled .row-reason").wait_for()
                page.wait_for_timeout(300)
                shoot("recompiled", size, theme, page)
                page.evaluate("() => window.playground.openExample('grad')")
                page.evaluate("() => window.playground.editor.trigger('shot', 'type', {text: '# my edit\\n'})")
                page.click("#examples-button")
                page.wait_for_timeout(300)
                shoot("drafts", size, theme, page)
                page.keyboard.press("Escape")
                # The shard_map example profiled: the timeline opens on the devices' steps, a
                # collective's details beside it.
                page.evaluate("() => window.playground.openExample('shard-map')")
                page.click("#profile-toggle")
                page.keyboard.press("Control+Enter")
                finished(page)
                page.evaluate("() => window.playground.selectTab('timeline')")
                page.wait_for_function("() => window.playground.timelineLanes().length > 1", timeout=60_000)
                page.wait_for_timeout(500)
                found = page.evaluate("() => window.playground.timelineLocate({kind: 'collective'})")
                if found:
                    page.mouse.click(found["x"], found["y"])
                page.wait_for_timeout(300)
                shoot("timeline", size, theme, page)
                page.click("#profile-toggle")
                if size == "phone":
                    page.evaluate("() => window.scrollTo(0, 0)")
                    page.click("#more-button")
                    page.wait_for_timeout(200)
                    shoot("more-menu", size, theme, page)
                    page.keyboard.press("Escape")

                page.goto(f"/s/{slug}")
                ready(page)
                page.wait_for_timeout(1500)
                shoot("snippet", size, theme, page)
                page.goto(f"/embed/{slug}")
                ready(page)
                page.wait_for_timeout(500)
                shoot("embed", size, theme, page)
                page.goto(f"/compare/{compared['slug']}")
                page.wait_for_function("() => window.playground.statuses().every(s => s)")
                page.wait_for_timeout(500)
                shoot("comparison", size, theme, page)
                for tab in ("compiled", "timing"):
                    page.evaluate("tab => window.playground.selectTab(tab)", tab)
                    page.wait_for_timeout(1200)
                    shoot(f"comparison-{tab}", size, theme, page)
                # Edits to someone's snippet, shared: the dialog offers the fork a title of its own.
                page.goto(f"/s/{slug}")
                ready(page)
                page.evaluate("code => window.playground.setCode(code)", CODE + "print(f(2.0))\n")
                page.click("#share-button")
                page.locator("#share-title-input").wait_for()
                page.wait_for_timeout(300)
                shoot("share-fork", size, theme, page)
                page.keyboard.press("Escape")
                page.goto("/accounts/login/")
                shoot("sign-in", size, theme, page)
                page.goto(f"/courses/join/{course['join_code']}")
                shoot("join", size, theme, page)
                page.get_by_role("link", name="Create an account").click()
                page.locator("#signup-course").wait_for()
                page.fill("#id_username", "grace")
                page.fill("#id_email", "grace@example.com")
                page.locator("#id_email").blur()
                shoot("sign-up-course", size, theme, page, full_page=True)
                context.add_cookies([cookie])
                page.goto("/me/snippets/")
                shoot("my-snippets", size, theme, page)
                page.goto("/me/runs/")
                shoot("my-runs", size, theme, page)

                as_person(context, "ines")
                page.goto(f"/courses/{course['course']}/dashboard")
                page.wait_for_selector(".dash-live, [data-live], table", timeout=30_000)
                page.wait_for_timeout(1500)
                shoot("course-dashboard", size, theme, page)
                page.goto(f"/courses/{course['course']}/")
                shoot("course", size, theme, page)
                as_person(context, "ada")
                page.goto(f"/assignments/{course['assignment']}/")
                page.wait_for_function("() => document.querySelector('.monaco-editor')")
                page.get_by_role("tab", name="Submissions").click()
                page.wait_for_timeout(800)
                shoot("assignment", size, theme, page)
                context.close()
        browser.close()
    for path in shots:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
