"""How soon the page is usable on a slow link: Chromium with its network throttled to
10 Mbit/s down, 5 Mbit/s up and 40 ms of round trip, against the real stack.

    python -m bench.first_paint                  # starts its own stack: compressed static files,
                                                 # then the same files served uncompressed
    python -m bench.first_paint --url http://127.0.0.1:8000 --loads 7
    python -m bench.first_paint --languages       # the English and the Chinese page, one stack


For each load, from navigation start: first contentful paint (the page's frame and the
"Loading the editor…" line), the editor shown (Monaco in the page), and interactive (the page's
script has run: Run is enabled and Ctrl+Enter works); and the bytes that crossed the link. Cold
is a new browser profile (empty cache), warm a reload in the same profile. Medians of --loads.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from playwright.sync_api import sync_playwright

from bench.stack import own_stack

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MBIT = 1_000_000 / 8  # bytes per second
LINK = {"offline": False, "latency": 40, "downloadThroughput": 10 * MBIT, "uploadThroughput": 5 * MBIT}

MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const bytes = [nav, ...performance.getEntriesByType('resource')]
    .reduce((n, e) => n + (e.transferSize || 0), 0);
  return {fcp: paint ? paint.startTime : null, bytes, marks: window.__marks};
}"""
# Timestamps (ms since navigation start) of the editor appearing and the page becoming usable.
WATCH = """
window.__marks = {};
new MutationObserver((_, observer) => {
  const m = window.__marks;
  if (!m.editor && document.querySelector('#editor .monaco-editor')) m.editor = performance.now();
  const run = document.getElementById('run-button');
  if (!m.interactive && window.playground && run && !run.disabled) m.interactive = performance.now();
  if (m.editor && m.interactive) observer.disconnect();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


def load(page, url: str) -> dict:
    page.goto(url, wait_until="commit")
    page.wait_for_function("() => window.__marks && window.__marks.editor && window.__marks.interactive",
                           timeout=60_000, polling=50)
    return page.evaluate(MEASURE)


def measure(browser, url: str, loads: int, locale: str = "en-US") -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {"cold": [], "warm": []}
    for _ in range(loads):
        # The browser's language picks the page's (Accept-Language): a Chinese page also loads
        # Monaco's Chinese messages.
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale=locale)
        page = context.new_page()
        page.add_init_script(WATCH)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", LINK)
        results["cold"].append(load(page, url))
        results["warm"].append(load(page, url))
        context.close()
    return results


def report(label: str, results: dict[str, list[dict]]) -> None:
    print(f"\n{label}")
    print(f"  {'':6} {'first paint':>12} {'editor shown':>13} {'interactive':>12} {'transferred':>12}")
    for kind, rows in results.items():
        fcp = statistics.median(r["fcp"] for r in rows)
        editor = statistics.median(r["marks"]["editor"] for r in rows)
        interactive = statistics.median(r["marks"]["interactive"] for r in rows)
        kib = statistics.median(r["bytes"] for r in rows) / 1024
        print(f"  {kind:6} {fcp:9.0f} ms {editor:10.0f} ms {interactive:9.0f} ms {kib:8.0f} KiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an already running playground (default: start our own)")
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--languages", action="store_true",
                        help="the page in English and in Chinese (collected static files), interleaved")
    args = parser.parse_args()
    print(f"link: 10 Mbit/s down, 5 Mbit/s up, {LINK['latency']} ms round trip; medians of {args.loads} loads")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if args.url:
            report(args.url, measure(browser, args.url, args.loads))
        elif args.languages:
            with own_stack("first-paint") as stack:
                results = {"en-US": {"cold": [], "warm": []}, "zh-CN": {"cold": [], "warm": []}}
                for _ in range(args.loads):
                    for locale, rows in results.items():
                        for kind, found in measure(browser, stack.url + "/", 1, locale).items():
                            rows[kind].extend(found)
                for locale, rows in results.items():
                    report(f"browser language {locale}", rows)
        else:
            modes = (("static files collected: hashed names, Brotli/gzip", {}),
                     ("static files as built (STATIC_FROM_SOURCE=1): uncompressed", {"STATIC_FROM_SOURCE": "1"}))
            for label, env in modes:
                with own_stack("first-paint", **env) as stack:
                    report(label, measure(browser, stack.url + "/", args.loads))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
