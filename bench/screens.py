"""Screenshots of every page at the three sizes people use (1440x900, 1024x768, 390x844), light,
and the playground dark too, into docs/screens/ (docs/SCREENS.md shows them).

    python -m bench.screens              # starts its own stack; about a minute

Each page is shown in a state worth looking at: the playground after a run that printed (with
colours), compiled, timed and drew; a shared snippet with its saved output; its embed; the
shortcuts panel; the drafts menu; a signed-in person's snippets.
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


def session_cookie(env: dict, url: str) -> dict:
    """A signed-in person (ada) with a snippet of her own: her session cookie."""
    script = (
        "import django; django.setup()\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.test import Client\n"
        "from snippets.actions import do_create_snippet\n"
        "user, _ = get_user_model().objects.get_or_create(username='ada')\n"
        "do_create_snippet(code='print(1)\\n', title='Ada notes', description='', device='cpu', run=None,"
        " parent=None, owner=user)\n"
        "c = Client(); c.force_login(user); print(c.cookies['sessionid'].value)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return {"name": "sessionid", "value": done.stdout.strip().splitlines()[-1], "url": url}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with own_stack("screens") as stack, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        slug = post_json(f"{stack.url}/api/snippets", {
            "code": CODE, "title": "tanh squared and its derivative",
            "description": "`f`, its gradient through `vmap`, and how long the jitted `f` takes."})["slug"]
        cookie = session_cookie(stack.env, stack.url)

        def shoot(name: str, size: str, theme: str, page) -> None:
            path = OUT / f"{name}-{size}-{theme}.png"
            page.screenshot(path=path)
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
                page.evaluate("() => window.playground.openExample('grad')")
                page.evaluate("() => window.playground.editor.trigger('shot', 'type', {text: '# my edit\\n'})")
                page.click("#examples-button")
                page.wait_for_timeout(300)
                shoot("drafts", size, theme, page)
                page.keyboard.press("Escape")

                page.goto(f"/s/{slug}")
                ready(page)
                page.wait_for_timeout(1500)
                shoot("snippet", size, theme, page)
                page.goto(f"/embed/{slug}")
                ready(page)
                page.wait_for_timeout(500)
                shoot("embed", size, theme, page)
                page.goto("/accounts/login/")
                shoot("sign-in", size, theme, page)
                context.add_cookies([cookie])
                page.goto("/me/snippets/")
                shoot("my-snippets", size, theme, page)
                context.close()
        browser.close()
    for path in shots:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
