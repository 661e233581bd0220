// A comparison's page (/compare/<slug>): one code, two runs (A and B: two runtimes or two
// devices), followed live side by side. Output and Figures in two columns; Compiled as a diff
// of each function's jaxpr, StableHLO or HLO, A against B; Timing as one table of what both
// measured, with how much faster or slower B is; Timeline, when both were profiled, their
// timelines one above the other. Opening it runs nothing: Run again makes a new comparison,
// with a link of its own.
import { ApiError, createComparison, type Comparison, type ComparisonSide } from "../api";
import { copyText, el, maybeById } from "../dom";
import type { CompiledEvent, RunEvent } from "../events";
import { duration, num, str } from "../format";
import { installWorker } from "../editor";
import { bindHeader } from "../header";
import { t } from "../i18n";
import { registerLanguages } from "../languages";
import { monaco } from "../monaco";
import { FiguresPane } from "../panes/figures";
import { OutputPane } from "../panes/output";
import { Tabs, type Pane } from "../panes/pane";
import { TimingPane } from "../panes/timing";
import { TimelineCompare } from "./timelines";
import { DiffViewer } from "../panes/viewers";
import { RunSession, type RunView } from "../run";
import { readableDate } from "../snippet";
import { StatusLine, statusWord } from "../status";
import { editorWorkerUrl } from "../workbench";
import { KEYS } from "../storage";
import {
  pairFunctions,
  pairTimings,
  profileOf,
  stdoutOf,
  textsAgree,
  TEXT_KINDS,
  verdict,
  type FunctionPair,
  type SideName,
  type TextKind,
} from "./model";

const KIND_LABELS: Record<TextKind, string> = { jaxpr: "jaxpr", stablehlo: "StableHLO", hlo: "HLO" };

/** One side: its run followed live, its own Output, Figures and Timing views, and its events. */
class Side {
  readonly events: RunEvent[] = [];
  readonly output = new OutputPane(() => {});
  readonly figures = new FiguresPane();
  readonly timing = new TimingPane();
  readonly session: RunSession;
  finished = false;

  constructor(
    readonly data: ComparisonSide,
    slug: string,
    onEvent: () => void,
  ) {
    const name = data.name;
    const part = (what: string) => document.getElementById(`side-${name}-${what}`) ?? el("span");
    const status = new StatusLine(part("status"), part("wall"), part("info"), part("message"));
    const collect: RunView = {
      reset: () => {
        this.events.length = 0;
        this.finished = false;
      },
      handle: (event) => {
        this.events.push(event);
        if (event.type === "finished") this.finished = true;
        onEvent();
      },
    };
    this.session = new RunSession(
      [this.output, this.figures, this.timing, collect],
      status,
      () => {},
      `${KEYS.run}:compare:${slug}:${name}`,
    );
  }

  start(): void {
    const run = this.data.run;
    void this.session.startWith(async () => run);
  }
}

/** A tab whose panel is two columns, one per side, each with its own pane. */
class Columns implements Pane {
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  readonly summary = el("p", "compare-summary");

  constructor(
    readonly id: string,
    readonly title: string,
    sides: readonly Side[],
    pick: (side: Side) => Pane,
  ) {
    this.summary.hidden = true;
    this.summary.setAttribute("role", "status");
    const columns = sides.map((side) => {
      const pane = pick(side);
      pane.onChange = () => this.onChange?.(null);
      const column = el("section", "compare-column", columnHeading(side.data), pane.element);
      column.setAttribute("aria-label", `${side.data.name}: ${side.data.label}`);
      return column;
    });
    this.element = el("div", "compare-pane", this.summary, el("div", "compare-columns", ...columns));
  }

  say(text: string | null, tone: "same" | "differs" | null = null): void {
    this.summary.hidden = text === null;
    this.summary.textContent = text ?? "";
    if (tone) this.summary.dataset.tone = tone;
    else delete this.summary.dataset.tone;
  }

  reset(): void {}
  handle(): void {}
}

function columnHeading(side: ComparisonSide): HTMLElement {
  return el("h2", "compare-column-heading", el("span", "side-name", side.name), side.label);
}

/** Compiled: each function both sides compiled, and a diff of its texts, A on the left. */
class CompiledDiff implements Pane {
  readonly id = "compiled";
  readonly title = t("Compiled");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;

  private pairs: FunctionPair[] = [];
  private selected: string | null = null;
  private kind: TextKind = "jaxpr";
  private shownKey = "";
  private readonly placeholder = el("div", "pane-placeholder");
  private readonly list = el("div", "compiled-list compare-functions");
  private readonly heading = el("div", "compare-diff-heading");
  private readonly kindSelect = el("select", "compare-kind");
  private readonly note = el("p", "code-view-note");
  private readonly diffHost = el("div", "code-view-host diff-host");
  private readonly diff = new DiffViewer(this.diffHost);
  private readonly detail: HTMLElement;

  constructor(private readonly sides: readonly Side[]) {
    this.list.setAttribute("role", "listbox");
    this.list.setAttribute("aria-label", t("Compiled functions"));
    this.list.addEventListener("keydown", (e) => this.onKey(e));
    for (const kind of TEXT_KINDS) {
      const option = el("option", null, KIND_LABELS[kind]);
      option.value = kind;
      this.kindSelect.append(option);
    }
    this.kindSelect.setAttribute("aria-label", t("Which text to compare"));
    this.kindSelect.addEventListener("change", () => {
      this.kind = this.kindSelect.value as TextKind;
      this.render();
    });
    const columns = el(
      "div",
      "compare-diff-columns",
      ...sides.map((s) => el("span", "compare-diff-side", el("span", "side-name", s.data.name), s.data.label)),
    );
    const toolbar = el("div", "compiled-toolbar", this.heading, el("label", "compare-kind-label", t("Compare"), " ", this.kindSelect));
    this.detail = el("div", "compiled-detail", toolbar, columns, this.note, this.diffHost);
    this.element = el("div", "compiled compare-compiled", this.placeholder, this.list, this.detail);
    this.update();
  }

  reset(): void {}
  handle(): void {}

  shown(): void {
    this.render();
  }

  update(): void {
    const [a, b] = this.sides.map((s) => s.events.filter((e): e is CompiledEvent => e.type === "compiled"));
    this.pairs = pairFunctions(a, b);
    if (this.selected === null || !this.pairs.some((p) => p.label === this.selected)) {
      this.selected = this.pairs[0]?.label ?? null;
    }
    this.onChange?.(this.pairs.length);
    this.render();
  }

  /** Each function's label and whether its texts agree (for tests and the console). */
  describe(): { label: string; jaxpr: string; stablehlo: string; hlo: string }[] {
    return this.pairs.map((p) => ({
      label: p.label,
      jaxpr: textsAgree(p, "jaxpr"),
      stablehlo: textsAgree(p, "stablehlo"),
      hlo: textsAgree(p, "hlo"),
    }));
  }

  select(label: string): void {
    this.selected = label;
    this.render();
  }

  private render(): void {
    const empty = this.pairs.length === 0;
    const done = this.sides.every((s) => s.finished);
    this.placeholder.hidden = !empty;
    this.list.hidden = empty;
    this.detail.hidden = empty;
    if (empty) {
      this.placeholder.replaceChildren(
        el("p", "pane-placeholder-title", done ? t("Neither run compiled a function.") : t("No compiled functions yet.")),
        el("p", null, t("Functions that jax.jit, grad, vmap or pmap compiled show here, each A against B.")),
      );
      return;
    }
    this.list.replaceChildren(...this.pairs.map((pair) => this.row(pair)));
    const pair = this.pairs.find((p) => p.label === this.selected)!;
    const agree = textsAgree(pair, this.kind);
    this.heading.replaceChildren(
      el("span", "row-name", pair.label),
      el("span", `chip ${agree === "differs" ? "chip-warn" : agree === "same" ? "chip-ok" : ""}`, agreeWords(agree, this.kind, pair)),
    );
    this.kindSelect.value = this.kind;
    const texts = [pair.a, pair.b].map((e) => str(e?.[this.kind]) ?? "");
    const missing = [pair.a, pair.b].map((e, i) => (e ? null : this.sides[i].data.name)).filter(Boolean);
    this.note.hidden = missing.length === 0;
    this.note.textContent = missing.length
      ? t("Only {side} compiled {function}.", { side: missing[0] === "A" ? "B" : "A", function: pair.label })
      : "";
    const key = `${pair.label}|${this.kind}|${texts[0].length}|${texts[1].length}`;
    // Monaco computes a diff in its worker, and one of a hidden editor is dropped half way: the
    // diff is made when the tab is in view (shown() renders again then).
    if (key !== this.shownKey && this.element.offsetParent !== null) {
      this.shownKey = key;
      this.diff.show(texts[0], texts[1], this.kind === "jaxpr" ? "jaxpr" : "hlo");
    }
  }

  private row(pair: FunctionPair): HTMLElement {
    const row = el("button", "compiled-row");
    row.type = "button";
    row.setAttribute("role", "option");
    const on = pair.label === this.selected;
    row.setAttribute("aria-selected", String(on));
    row.tabIndex = on ? 0 : -1;
    row.dataset.label = pair.label;
    row.addEventListener("click", () => {
      this.select(pair.label);
      this.list.querySelector<HTMLElement>(`[aria-selected="true"]`)?.focus();
    });
    const agree = textsAgree(pair, "jaxpr");
    const chip = el(
      "span",
      `chip ${agree === "differs" ? "chip-warn" : agree === "same" ? "chip-ok" : ""}`,
      agree === "same" ? t("same jaxpr") : agree === "differs" ? t("jaxpr differs") : pair.a ? t("A only") : t("B only"),
    );
    const times = [pair.a, pair.b].map((e, i) => {
      const ms = num(e?.compile_ms);
      return `${this.sides[i].data.name} ${ms === null ? "–" : duration(ms)}`;
    });
    row.append(
      el("span", "row-head", el("span", "row-title", el("span", "row-name", pair.label)), chip),
      el("span", "row-sub", el("span", "row-metrics", t("compile: {times}", { times: times.join(" · ") }))),
    );
    return row;
  }

  private onKey(e: KeyboardEvent): void {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const i = this.pairs.findIndex((p) => p.label === this.selected) + (e.key === "ArrowDown" ? 1 : -1);
    const next = this.pairs[i];
    if (next) {
      this.select(next.label);
      this.list.querySelector<HTMLElement>(`[aria-selected="true"]`)?.focus();
    }
    e.preventDefault();
  }
}

function agreeWords(agree: string, kind: TextKind, pair: FunctionPair): string {
  const label = KIND_LABELS[kind];
  if (agree === "same") return t("the same {kind} on both", { kind: label });
  if (agree === "differs") return t("{kind} differs", { kind: label });
  return pair.a && pair.b ? t("no {kind} on one side", { kind: label }) : pair.a ? t("A only") : t("B only");
}

/** Timing: one table of what both runs measured (compile times, %timeit, bench, the wall time),
 *  each with a bar per side and B's speed against A's; each side's own cards below. */
class TimingTable implements Pane {
  readonly id = "timing";
  readonly title = t("Timing");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  private readonly body = el("tbody");
  private readonly placeholder = el("p", "pane-placeholder");

  constructor(private readonly sides: readonly Side[]) {
    const head = el(
      "tr",
      null,
      el("th", null, t("Measured")),
      ...sides.map((s) => el("th", "num", el("span", "side-name", s.data.name), s.data.label)),
      el("th", null, t("B against A")),
    );
    for (const th of head.children) th.setAttribute("scope", "col");
    const table = el("table", "data-table compare-timing", el("thead", null, head), this.body);
    const details = el(
      "div",
      "compare-columns",
      ...sides.map((s) => el("section", "compare-column", columnHeading(s.data), s.timing.element)),
    );
    // A narrow screen scrolls the table sideways: a region the keyboard can scroll too.
    const wrap = el("div", "compare-table-wrap", table);
    wrap.tabIndex = 0;
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", t("Timing, A against B"));
    this.element = el(
      "div",
      "pane-scroll compare-pane",
      this.placeholder,
      wrap,
      el("h2", "compare-subheading", t("Each run's measurements")),
      details,
    );
    this.update();
  }

  reset(): void {}
  handle(): void {}

  update(): void {
    const rows = pairTimings(this.sides[0].events, this.sides[1].events);
    this.placeholder.hidden = rows.length > 0;
    this.placeholder.textContent = t("Nothing measured yet.");
    this.body.replaceChildren(
      ...rows.map((row) => {
        const most = Math.max(row.a ?? 0, row.b ?? 0) || 1;
        const cell = (ms: number | null, side: SideName) =>
          el(
            "td",
            "num",
            ms === null ? "–" : duration(ms),
            ms === null ? null : bar(ms / most, side),
          );
        const th = el("th", null, row.label);
        th.setAttribute("scope", "row");
        return el("tr", null, th, cell(row.a, "A"), cell(row.b, "B"), el("td", "compare-verdict", verdict(row.a, row.b)));
      }),
    );
    this.onChange?.(rows.filter((r) => r.kind !== "run").length || null);
  }

  rows(): { label: string; a: number | null; b: number | null; verdict: string }[] {
    return pairTimings(this.sides[0].events, this.sides[1].events).map((r) => ({ ...r, verdict: verdict(r.a, r.b) }));
  }
}

function bar(fraction: number, side: SideName): HTMLElement {
  const b = el("span", `compare-bar compare-bar-${side}`);
  b.style.setProperty("--fraction", String(Math.max(0.02, Math.min(1, fraction))));
  b.setAttribute("aria-hidden", "true");
  return b;
}

export function comparePage(data: Comparison): void {
  // The diff editor computes its diff in Monaco's worker, as the playground's editor does.
  installWorker(editorWorkerUrl());
  bindHeader();
  void colorizeCode(data.code);
  const sides: Side[] = [];
  let compiled: CompiledDiff | null = null;
  let timing: TimingTable | null = null;
  let outputs: Columns | null = null;
  let timelines: TimelineCompare | null = null;
  let scheduled = false;
  const update = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      compiled?.update();
      timing?.update();
      timelines?.update();
      if (sides.every((s) => s.finished)) {
        const same = stdoutOf(sides[0].events) === stdoutOf(sides[1].events);
        const statuses = sides.map((s) => (s.events.find((e) => e.type === "finished") as { status?: string })?.status);
        const [a, b] = statuses.map((s) => statusWord(s ?? ""));
        const summary = statuses[0] === statuses[1]
          ? same
            ? t("Both {status}; they printed the same output.", { status: a })
            : t("Both {status}; their printed output differs.", { status: a })
          : same
            ? t("A {a}, B {b}; they printed the same output.", { a, b })
            : t("A {a}, B {b}; their printed output differs.", { a, b });
        outputs?.say(summary, same ? "same" : "differs");
      }
    });
  };
  for (const side of data.sides) sides.push(new Side(side, data.slug, update));
  outputs = new Columns("output", t("Output"), sides, (s) => s.output);
  compiled = new CompiledDiff(sides);
  timing = new TimingTable(sides);
  const figures = new Columns("figures", t("Figures"), sides, (s) => s.figures);
  timelines = new TimelineCompare(sides);
  const tabs = new Tabs(document.getElementById("tabs")!, document.getElementById("tab-panels")!, [outputs, compiled, timing, figures, timelines]);
  for (const side of sides) side.start();

  bindActions(data, () => sides.some((s) => profileOf(s.events) !== null));
  Object.assign(window, {
    playground: {
      comparison: data.slug,
      selectTab: (id: string) => tabs.select(id),
      statuses: () => sides.map((s) => (s.events.find((e) => e.type === "finished") as { status?: string } | undefined)?.status ?? null),
      stdout: () => sides.map((s) => stdoutOf(s.events)),
      functions: () => compiled!.describe(),
      selectFunction: (label: string) => compiled!.select(label),
      timings: () => timing!.rows(),
      timelines: () => timelines!.describe(),
      timelineViews: () => timelines!.views(),
    },
  });
}

async function colorizeCode(code: string): Promise<void> {
  const pre = maybeById("compare-code");
  if (!pre) return;
  try {
    registerLanguages();
    pre.innerHTML = await monaco.editor.colorize(code.replace(/\n+$/, ""), "python", { tabSize: 4 });
  } catch {
    // The plain text the server rendered stays.
  }
}

/** Run again (a new comparison of the same sides, profiled when these were) and Copy link. */
function bindActions(data: Comparison, profiled: () => boolean): void {
  const again = maybeById<HTMLButtonElement>("compare-again");
  const message = maybeById("compare-message");
  again?.addEventListener("click", async () => {
    again.disabled = true;
    if (message) message.textContent = t("Starting both runs…");
    try {
      const next = await createComparison({
        code: data.code,
        title: data.title,
        snippet: data.snippet?.slug ?? null,
        sides: [
          { runtime: data.sides[0].runtime, device: data.sides[0].device },
          { runtime: data.sides[1].runtime, device: data.sides[1].device },
        ],
        ...(profiled() ? { options: { profile: true } } : {}),
      });
      location.assign(next.url);
    } catch (error) {
      again.disabled = false;
      if (message) message.textContent = error instanceof ApiError ? error.message : String(error);
    }
  });
  const copy = maybeById<HTMLButtonElement>("compare-copy");
  copy?.addEventListener("click", async () => {
    const ok = await copyText(location.origin + location.pathname);
    if (message) message.textContent = ok ? t("Link copied.") : t("Copy this link: {url}", { url: location.origin + location.pathname });
  });
  const when = maybeById("compare-when");
  if (when) when.textContent = readableDate(data.created_at);
}
