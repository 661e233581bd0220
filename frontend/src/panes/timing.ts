// The "Timing" tab: single measurements (%timeit, %time, jaxplay.bench) as a list, and each
// comparison of several implementations (jaxplay.compare) as a bar chart of medians with their
// spread above a table with speed-ups against the first row.
import type { RunEvent, TimingRow, TimingSingle } from "../events";
import { el } from "../dom";
import { count, duration, num, percent, rate, richText, speedup, str } from "../format";
import { partsText } from "../explanations";
import { formatNumber, t } from "../i18n";
import { CardListPane } from "./cardlist";
import { asName, sentence } from "./pane";

const SINGLE_KINDS = new Set(["single", "bench", "timeit", "time"]);
const KIND_CHIPS: Record<string, string> = { timeit: "%timeit", time: "%time", bench: "bench" };

export class TimingPane extends CardListPane {
  readonly id = "timing";
  readonly title = t("Timing");
  private singles: HTMLElement | null = null;

  constructor() {
    super("timing", "timing-cards");
    this.reset();
  }

  protected clear(): void {
    this.singles = null;
  }

  protected take(event: RunEvent): void {
    if (event.type !== "timing") return;
    const data = event as unknown as Record<string, unknown>;
    const kind = str(data.kind) ?? "single";
    if (kind === "comparison" && Array.isArray(data.rows)) {
      this.list.append(comparisonCard(data));
      // Later single measurements start a list of their own, below the comparison.
      this.singles = null;
    } else if (SINGLE_KINDS.has(kind)) {
      if (!this.singles) {
        this.singles = el("ul", "measure-list");
        this.list.append(
          el("section", "card timing-card", el("header", "card-header", el("h2", "card-title", t("Measurements"))), this.singles),
        );
      }
      this.singles.append(measurement(data as TimingSingle, kind));
    } else {
      this.list.append(genericCard(data));
    }
    this.added();
  }

  protected placeholderText(finished: boolean): [string, (string | Node)[]] {
    const code = (text: string) => el("code", null, text);
    return [
      finished ? t("This run timed nothing.") : t("No timings yet."),
      sentence(
        t("{timeit} and {time} work as in Jupyter (a JAX call returns before it has computed: without {block}, %timeit times only the dispatch). {bench} times a function properly (compile apart, warm-up, block_until_ready, median and spread), and {compare} times several side by side."),
        {
          timeit: code("%timeit f(x).block_until_ready()"),
          time: code("%time f(x)"),
          block: code(".block_until_ready()"),
          bench: code("jaxplay.bench(f, x)"),
          compare: code('jaxplay.compare({"numpy": f, "jit": jax.jit(f)}, x)'),
        },
      ),
    ];
  }
}

// ---- Single measurements -------------------------------------------------------------------

/**
 * One measurement: its label, the headline time as its timer reports it (%timeit: the mean ±
 * std per loop; %time: the wall time; bench: the median), then the details that were measured.
 */
function measurement(r: TimingSingle, kind: string): HTMLElement {
  const median = num(r.median_ms);
  const mean = num(r.mean_ms);
  const std = num(r.std_ms);
  const wall = num(r.wall_ms);
  const meanStd = mean === null ? null : std !== null && std > 0 ? `${duration(mean)} ± ${duration(std)}` : duration(mean);

  let headline: string | null = null;
  let headlineTitle = "";
  const details: [string, string, string?][] = [];
  if (kind === "time") {
    headline = wall !== null ? duration(wall) : median !== null ? duration(median) : meanStd;
    headlineTitle = t("wall time");
    const user = num(r.cpu_user_ms);
    const sys = num(r.cpu_sys_ms);
    if (user !== null) details.push([t("CPU user"), duration(user)]);
    if (sys !== null) details.push([t("sys"), duration(sys)]);
  } else if (kind === "timeit" || median === null) {
    headline = meanStd;
    headlineTitle = std !== null ? t("mean ± std. dev. per loop") : t("mean per loop");
    if (median !== null) details.push([t("median"), duration(median)]);
  } else {
    headline = duration(median);
    headlineTitle = t("median per call");
    if (std !== null) details.push([t("± std"), duration(std)]);
  }
  const min = num(r.min_ms);
  if (min !== null && kind !== "time") details.push([t("min"), duration(min)]);
  const repeats = num(r.repeats);
  const loops = num(r.loops);
  if (kind !== "time" && (repeats !== null || loops !== null)) {
    details.push([
      t("runs"),
      loops !== null && loops !== 1
        ? t("{repeats} × {loops} loops", { repeats: repeats === null ? "?" : formatNumber(repeats), loops: formatNumber(loops) })
        : repeats === null ? "?" : formatNumber(repeats),
      t("Repeats × calls per repeat"),
    ]);
  }
  const compile = num(r.compile_ms);
  if (compile !== null) {
    details.push(r.compile_cached === true
      ? [t("load"), duration(compile), t("Loaded from this node's compile cache before timing (an earlier run compiled exactly this module), and not counted")]
      : [t("compile"), duration(compile), t("Compiled before timing, and not counted")]);
  }
  const gflops = num(r.gflops);
  if (gflops !== null) details.push(["GFLOP/s", rate(gflops)]);
  const gbs = num(r.gbs);
  if (gbs !== null) details.push(["GB/s", rate(gbs)]);
  for (const [label, share] of peakShares(r)) details.push([label, percent(share)]);

  const value = el("span", "measure-value", headline ?? "—");
  if (headlineTitle) value.title = headlineTitle;
  const head = el("span", "measure-head");
  const chip = KIND_CHIPS[kind];
  if (chip) {
    // The timer's own name, as typed: not a word to translate.
    const name = el("span", "chip", chip);
    name.translate = false;
    head.append(name);
  }
  const label = str(r.label);
  head.append(label ? asName(el("span", "measure-label", label)) : el("span", "measure-label", t("(unnamed)")));
  if (r.dispatch_only === true) head.append(el("span", "chip chip-warn", t("dispatch only")));
  if (r.donated === true) head.append(el("span", "chip", t("donated")));
  head.append(value);
  const item = el("li", "measure", head);
  if (details.length) {
    item.append(
      el(
        "span",
        "measure-details",
        ...details.map(([k, v, title]) => {
          const s = el("span", "stat", el("span", "stat-label", k), el("span", "stat-value", v));
          if (title) s.title = title;
          return s;
        }),
      ),
    );
  }
  for (const note of notesOf(r)) item.append(el("span", "measure-note", ...richText(note)));
  return item;
}

/** "of H200 bandwidth 42 %", "of peak FLOP/s 42 %": the shares of the device's peak the timer knows. */
function peakShares(r: TimingSingle): [string, number][] {
  const out: [string, number][] = [];
  const name = str(r.peak?.name);
  const bandwidth = num(r.bandwidth_share);
  const flops = num(r.flops_share);
  if (bandwidth !== null) out.push([name ? t("of {device} bandwidth", { device: name }) : t("of peak bandwidth"), bandwidth]);
  if (flops !== null) out.push([name ? t("of {device} FLOP/s", { device: name }) : t("of peak FLOP/s"), flops]);
  return out;
}

function notesOf(r: TimingSingle): string[] {
  const notes: string[] = [];
  const note = str(r.note);
  if (note) notes.push(note);
  if (Array.isArray(r.notes)) {
    // Each note in the page's language when its sentences came with it and are all known here.
    const parts = Array.isArray(r.notes_parts) && r.notes_parts.length === r.notes.length ? r.notes_parts : null;
    r.notes.forEach((n, i) => {
      if (typeof n !== "string" || !n) return;
      notes.push(partsText(parts?.[i])?.join("") ?? n);
    });
  }
  return notes;
}

// ---- Comparisons ---------------------------------------------------------------------------

interface Column<T> {
  head: string;
  title?: string;
  cell(row: T): string | null;
  className?: string;
}

function comparisonCard(data: Record<string, unknown>): HTMLElement {
  const rows = (data.rows as unknown[]).filter((r): r is TimingRow => typeof r === "object" && r !== null);
  const baseMedian = rows.length ? num(rows[0].median_ms) : null;
  const speedOf = (r: TimingRow): number | null => {
    const given = num(r.speedup);
    if (given !== null) return given;
    const median = num(r.median_ms);
    return baseMedian !== null && median ? baseMedian / median : null;
  };
  const baseline = str(data.baseline) ?? str(rows[0]?.label) ?? null;

  const card = el("section", "card timing-card comparison");
  const title = el("h2", "card-title", str(data.label) ?? t("Comparison"));
  const sub = el("span", "card-sub", baseline ? t("speed-up against {baseline}", { baseline }) : "");
  card.append(el("header", "card-header", title, sub));
  const note = str(data.note);
  if (note) card.append(el("p", "card-note", note));
  card.append(barChart(rows, speedOf));

  const columns: Column<TimingRow>[] = [
    { head: "", cell: (r) => str(r.label) ?? t("(unnamed)"), className: "cell-label" },
    { head: t("median"), cell: (r) => ms(r.median_ms), className: "cell-num cell-main" },
    { head: t("± std"), cell: (r) => ms(r.std_ms), className: "cell-num" },
    { head: t("min"), cell: (r) => ms(r.min_ms), className: "cell-num" },
    {
      head: t("speed-up"),
      title: baseline
        ? t("Median time of {baseline} divided by this one's", { baseline })
        : t("Median time of the first row divided by this one's"),
      cell: (r) => {
        const s = speedOf(r);
        return s === null ? null : speedup(s);
      },
      className: "cell-num cell-speedup",
    },
    {
      head: "GFLOP/s",
      title: t("Floating-point operations per call (XLA's cost analysis) ÷ median time"),
      cell: (r) => {
        const v = num(r.gflops);
        return v === null ? null : rate(v);
      },
      className: "cell-num",
    },
    {
      head: "GB/s",
      title: t("Bytes accessed per call (XLA's cost analysis) ÷ median time"),
      cell: (r) => {
        const v = num(r.gbs);
        return v === null ? null : rate(v);
      },
      className: "cell-num",
    },
    {
      head: t("of peak"),
      title: t("Share of the device's peak memory bandwidth"),
      cell: (r) => {
        const v = num(r.bandwidth_share);
        return v === null ? null : percent(v);
      },
      className: "cell-num",
    },
  ];
  card.append(el("div", "table-scroll", table(columns, rows, notesOf)));

  // NumPy and un-jitted JAX have no cost analysis: their rates borrow a jitted row's counts.
  const borrowed = rows.filter((r) => str(r.cost_from) && r.cost_from !== r.label && (num(r.gbs) ?? num(r.gflops)) !== null);
  if (borrowed.length) {
    const names = borrowed.map((r) => str(r.label) ?? "?").join(t(", "));
    const donor = str(borrowed[0].cost_from)!;
    card.append(
      el("p", "card-foot", t("GFLOP/s and GB/s of {names} count the work of {donor} (from XLA's cost analysis): the same computation, done another way.", { names, donor })),
    );
  }
  return card;
}

/** One bar per row: the median, a whisker of ± one standard deviation, a tick at the minimum. */
function barChart(rows: TimingRow[], speedOf: (r: TimingRow) => number | null): HTMLElement {
  const chart = el("div", "bar-chart");
  let top = 0;
  for (const r of rows) top = Math.max(top, (num(r.median_ms) ?? 0) + (num(r.std_ms) ?? 0));
  const pct = (value: number) => `${Math.max(0, Math.min(100, (value / (top || 1)) * 100)).toFixed(2)}%`;
  const summary: string[] = [];
  rows.forEach((r, i) => {
    const label = str(r.label) ?? `#${i + 1}`;
    const median = num(r.median_ms);
    const std = num(r.std_ms);
    const min = num(r.min_ms);
    const s = speedOf(r);
    const track = el("div", "bar-track");
    if (median !== null) {
      const bar = el("div", i === 0 ? "bar bar-baseline" : "bar");
      bar.style.width = pct(median);
      track.append(bar);
      if (std !== null && std > 0) {
        const low = Math.max(0, median - std);
        const whisker = el("div", "bar-whisker");
        whisker.style.left = pct(low);
        whisker.style.width = `calc(${pct(median + std)} - ${pct(low)})`;
        track.append(whisker);
      }
      if (min !== null) {
        const tick = el("div", "bar-min");
        tick.style.left = pct(min);
        track.append(tick);
      }
      track.title = [
        t("median {time}", { time: duration(median) }),
        std !== null ? `± ${duration(std)}` : "",
        min !== null ? t("min {time}", { time: duration(min) }) : "",
      ].filter(Boolean).join(" · ");
    }
    const value = el("span", "bar-value", median !== null ? duration(median) : "—");
    const speed = el("span", "bar-speedup", i === 0 ? t("baseline") : s !== null ? speedup(s) : "");
    if (i > 0 && s !== null) speed.dataset.trend = s >= 1.05 ? "faster" : s <= 0.95 ? "slower" : "same";
    const name = asName(el("span", "bar-label", label));
    name.title = label;
    chart.append(name, track, value, speed);
    const time = median !== null ? duration(median) : t("no time");
    summary.push(i > 0 && s !== null ? t("{label}: {time} ({speedup})", { label, time, speedup: speedup(s) }) : t("{label}: {time}", { label, time }));
  });
  chart.setAttribute("role", "img");
  chart.setAttribute("aria-label", t("Median times: {list}", { list: summary.join(t("; ")) }));
  const legend = el(
    "p",
    "bar-legend",
    el("span", "legend-bar"),
    t("median"),
    el("span", "legend-whisker"),
    t("± 1 std"),
    el("span", "legend-min"),
    t("min"),
  );
  return el("div", "bar-figure", chart, legend);
}

/** A table with only the columns some row has a value for, and each row's notes under it. */
function table<T>(columns: Column<T>[], rows: T[], notes: (row: T) => string[]): HTMLTableElement {
  const used = columns.filter((c, i) => i === 0 || rows.some((r) => c.cell(r) !== null));
  const head = el("tr");
  for (const c of used) {
    const th = el("th", c.className ?? null, c.head);
    th.scope = "col";
    if (c.title) th.title = c.title;
    head.append(th);
  }
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr", "data-row");
    used.forEach((c, i) => {
      const cell = el(i === 0 ? "th" : "td", c.className ?? null, c.cell(r) ?? "—");
      if (i === 0) (cell as HTMLTableCellElement).scope = "row";
      tr.append(cell);
    });
    body.append(tr);
    for (const text of notes(r)) {
      const td = el("td", null, ...richText(text));
      td.colSpan = used.length;
      body.append(el("tr", "note-row", td));
    }
  }
  return el("table", "data-table", el("thead", null, head), body);
}

function ms(value: unknown): string | null {
  const n = num(value);
  return n === null ? null : duration(n);
}

/** A timing of a kind this page does not know yet: its fields as they are. */
function genericCard(data: Record<string, unknown>): HTMLElement {
  const card = el("section", "card timing-card");
  card.append(el("header", "card-header", el("h2", "card-title", str(data.label) ?? t("Timing")), el("span", "card-sub", str(data.kind) ?? "")));
  const dl = el("dl", "kv");
  for (const [key, value] of Object.entries(data)) {
    if (["seq", "ts", "type", "label", "kind", "text"].includes(key)) continue;
    const text = typeof value === "number" ? (key.endsWith("_ms") ? duration(value) : count(value)) : JSON.stringify(value);
    dl.append(el("dt", null, key), el("dd", null, text.length > 200 ? `${text.slice(0, 200)}…` : text));
  }
  card.append(dl);
  return card;
}
