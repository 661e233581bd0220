"""How the Timeline tab copes with a large profile: Chromium on the playground's page, a synthetic
trace of 100,000 events over 8 device lanes and the host given to the page's own Timeline pane
(``window.playground.showTrace``: the pane, the parser and the canvas a run's profile uses), then
60 steps of panning with the keyboard (A and D, as a person holds them) and 60 of dragging.

    .venv/bin/python -m bench.profile_page                 # starts its own stack
    .venv/bin/python -m bench.profile_page --url http://127.0.0.1:8000 --events 200000 --json

Time to first draw: from the trace given to the page to its first frame drawn (parsing, nesting,
the summary table and the first frame). Frame time: what drawing each frame took, in the page
(median and 95th percentile over the pan); and the time between frames: for the keys, a keydown
dispatched on the canvas every animation frame, as a held key would (16.7 ms is 60 frames a
second); for the drag, Playwright's mouse, whose own pace that is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# A profile as the runner's would be (frontend/src/profile/trace.ts reads it; docs/ARCHITECTURE.md's
# Profiles describes it): the host's Python and compile threads, then per device an "XLA Modules" row of
# training steps and an "XLA Ops" row of the steps' ops (fusions, dots, copies, reductions, and two
# all-reduces whose wait for the slowest peer is a "wait" child), deterministic (a seeded LCG) and
# exactly `events` X events long.
SYNTHETIC_TRACE_JS = """
({events = 100000, devices = 8} = {}) => {
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const out = [];
  const meta = (pid, name, args, tid) => out.push(tid === undefined
    ? {ph: "M", pid, name, args} : {ph: "M", pid, tid, name, args});
  meta(1, "process_name", {name: "Host"});
  meta(1, "process_sort_index", {sort_index: 0});
  meta(1, "thread_name", {name: "Python"}, 1);
  meta(1, "thread_name", {name: "XLA compile"}, 2);
  for (let d = 0; d < devices; d++) {
    const pid = 10 + d;
    meta(pid, "process_name", {name: `TFRT_CPU_${d}`});
    meta(pid, "process_labels", {labels: "device"});
    meta(pid, "process_sort_index", {sort_index: pid});
    meta(pid, "thread_name", {name: "XLA Modules"}, 1);
    meta(pid, "thread_name", {name: "XLA Ops"}, 2);
  }
  const hostEvents = Math.max(4, Math.round(events * 0.02));
  const perStep = 25;  // a module, 20 ops, 2 collectives and their waits
  const steps = Math.floor((events - hostEvents) / (devices * perStep));
  const module = "jit_train_step";
  const kinds = [["fusion", "fusion"], ["dot", "matmul"], ["copy", "copy"], ["reduce", "reduce"],
                 ["add", "elementwise"], ["multiply", "elementwise"]];
  let x = 0;
  const step = 220;
  for (let d = 0; d < devices; d++) {
    const pid = 10 + d;
    for (let s = 0; s < steps; s++) {
      const t0 = 50 + s * step + d * 0.7;
      out.push({ph: "X", pid, tid: 1, ts: t0, dur: step - 12, name: module, cat: "module",
                args: {hlo_module: module, device: `TFRT_CPU_${d}`}});
      x++;
      let t = t0 + 1;
      for (let i = 0; i < 22; i++) {
        if (i === 10 || i === 21) {
          const wait = (devices - 1 - d) * 3 + rand() * 4;
          const dur = wait + 8 + rand() * 4;
          const name = i === 10 ? "all-reduce.1" : "all-reduce.2";
          out.push({ph: "X", pid, tid: 2, ts: t, dur, name, cat: "collective",
                    args: {hlo_op: name, hlo_module: module, opcode: "all-reduce", device: `TFRT_CPU_${d}`,
                           run_id: s, wait_us: wait}});
          out.push({ph: "X", pid, tid: 2, ts: t + 0.2, dur: wait, name: "Rendezvous", cat: "wait", args: {}});
          x += 2;
          t += dur + 0.5;
          continue;
        }
        const [op, cat] = kinds[i % kinds.length];
        const dur = 2 + rand() * 6;
        const name = `${op}.${i}`;
        out.push({ph: "X", pid, tid: 2, ts: t, dur, name, cat,
                  args: {hlo_op: name, hlo_module: module, opcode: op, device: `TFRT_CPU_${d}`, run_id: s}});
        x++;
        t += dur + 0.3 + rand() * 1.5;
      }
    }
  }
  const host = events - x;
  const span = 50 + steps * step;
  out.push({ph: "X", pid: 1, tid: 2, ts: 1, dur: 45, name: "compile jit_train_step", cat: "compile", args: {}});
  out.push({ph: "X", pid: 1, tid: 1, ts: 0, dur: span, name: "<module>", cat: "python",
            args: {file: "<snippet>", line: 1}});
  const calls = host - 2;
  const each = span / Math.max(1, calls);
  for (let i = 0; i < calls; i++) {
    out.push({ph: "X", pid: 1, tid: 1, ts: 48 + i * each, dur: each * 0.6, name: "train_step", cat: "python",
              args: {file: "<snippet>", line: 9}});
  }
  return {displayTimeUnit: "ns", otherData: {producer: "bench.profile_page", format: "1", cut: ""},
          traceEvents: out};
}
"""

SHOW = """async ({generator, events, devices}) => {
  const make = eval(generator);
  const trace = make({events, devices});
  const count = trace.traceEvents.filter((e) => e.ph === "X").length;
  const stats = await window.playground.showTrace(trace);
  return {count, firstDrawMs: stats.firstDrawMs};
}"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    i = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[i]


# A held key, as the page sees it: one keydown on the canvas per animation frame (the keyboard's
# repeat is slower), half of them D and half A; the time between the frames, in the page.
HOLD_KEYS = """async ([steps, first, then]) => {
  const canvas = document.querySelector('#panel-timeline canvas');
  canvas.focus();
  const frame = () => new Promise(requestAnimationFrame);
  const at = [];
  for (let i = 0; i < steps; i++) {
    canvas.dispatchEvent(new KeyboardEvent('keydown', {key: i < steps / 2 ? first : then, bubbles: true}));
    await frame();
    at.push(performance.now());
  }
  return at.slice(1).map((t, i) => t - at[i]);
}"""


def pan_with_keys(page, steps: int) -> dict:
    canvas = page.locator("#panel-timeline canvas")
    canvas.focus()
    for _ in range(10):
        page.keyboard.press("w")  # in, where every step of the pan moves the view
    page.wait_for_timeout(600)  # a pause ends the zoom's burst of frames
    paced = page.evaluate(HOLD_KEYS, [steps, "d", "a"])
    stats = page.evaluate("window.playground.timelineStats()")
    return {"frames": stats["frames"], "intervals": paced}


def zoom_with_keys(page, steps: int) -> dict:
    """From the whole trace (every event in view, the densest frames) in with W and out with S."""
    page.locator("#panel-timeline canvas").focus()
    page.keyboard.press("0")
    page.wait_for_timeout(600)
    paced = page.evaluate(HOLD_KEYS, [steps, "w", "s"])
    stats = page.evaluate("window.playground.timelineStats()")
    return {"frames": stats["frames"], "intervals": paced}


def pan_with_drag(page, steps: int) -> dict:
    """A drag with the mouse (Playwright's, so real input): the time between frames is the
    driver's pace here, and the time each frame took to draw is the page's."""
    canvas = page.locator("#panel-timeline canvas")
    canvas.focus()
    page.keyboard.press("0")
    for _ in range(6):
        page.keyboard.press("w")  # in (to a fifth of the trace), where the drag moves the view
    box = canvas.bounding_box()
    y = box["y"] + box["height"] / 2
    x = box["x"] + box["width"] * 0.75
    page.wait_for_timeout(600)
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(steps):
        x += -8 if i < steps // 2 else 8
        page.mouse.move(x, y)
        page.evaluate("() => new Promise(requestAnimationFrame)")
    page.mouse.up()
    page.wait_for_timeout(100)
    return page.evaluate("window.playground.timelineStats()")


def measure(browser, url: str, events: int, devices: int, steps: int, rounds: int) -> dict:
    results = {"events": events, "devices": devices, "first_draw_ms": [], "keys": {"draw": [], "interval": []},
               "zoom": {"draw": [], "interval": []}, "drag": {"draw": [], "interval": []}}
    for _ in range(rounds):
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("() => window.playground && window.playground.showTrace"
                               " && document.querySelector('#editor .monaco-editor')", timeout=60_000)
        shown = page.evaluate(SHOW, {"generator": SYNTHETIC_TRACE_JS, "events": events, "devices": devices})
        if shown["count"] != events:
            raise SystemExit(f"the synthetic trace has {shown['count']} events, not {events}")
        lanes = page.evaluate("window.playground.timelineLanes()")
        if len([name for name in lanes if name.startswith("TFRT_CPU_")]) != devices:
            raise SystemExit(f"the page drew lanes {lanes}")
        results["first_draw_ms"].append(shown["firstDrawMs"])
        for kind, pan in (("keys", pan_with_keys), ("zoom", zoom_with_keys), ("drag", pan_with_drag)):
            stats = pan(page, steps)
            results[kind]["draw"] += stats["frames"]
            results[kind]["interval"] += stats["intervals"]
        context.close()
    return results


def summarise(results: dict) -> dict:
    out = {"events": results["events"], "devices": results["devices"],
           "first_draw_ms": statistics.median(results["first_draw_ms"])}
    for kind in ("keys", "zoom", "drag"):
        draw = results[kind]["draw"]
        interval = results[kind]["interval"]
        out[kind] = {"frames": len(draw),
                     "draw_median_ms": statistics.median(draw) if draw else None,
                     "draw_p95_ms": percentile(draw, 0.95),
                     "interval_median_ms": statistics.median(interval) if interval else None,
                     "interval_p95_ms": percentile(interval, 0.95)}
    return out


def report(summary: dict) -> None:
    print(f"{summary['events']:,} events, {summary['devices']} device lanes and the host;"
          f" time to first draw {summary['first_draw_ms']:.0f} ms (median)")
    print(f"  {'':10} {'frames':>7} {'draw median':>12} {'draw p95':>9} {'frame median':>13} {'frame p95':>10}")
    for kind, label in (("keys", "A/D keys"), ("zoom", "W/S keys"), ("drag", "drag")):
        s = summary[kind]
        print(f"  {label:10} {s['frames']:>7} {s['draw_median_ms']:>9.2f} ms {s['draw_p95_ms']:>6.2f} ms"
              f" {s['interval_median_ms']:>10.1f} ms {s['interval_p95_ms']:>7.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an already running playground (default: start our own)")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--steps", type=int, default=60, help="pan steps of each kind")
    parser.add_argument("--rounds", type=int, default=3, help="fresh pages; medians over all")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            if args.url:
                results = measure(browser, args.url.rstrip("/") + "/", args.events, args.devices, args.steps,
                                  args.rounds)
            else:
                from bench.stack import own_stack

                with own_stack("profile-page") as stack:
                    results = measure(browser, stack.url + "/", args.events, args.devices, args.steps, args.rounds)
        finally:
            browser.close()
    summary = summarise(results)
    if args.json:
        print(json.dumps(summary))
    else:
        report(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
