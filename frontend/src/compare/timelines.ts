// A comparison's Timeline tab: when both runs were profiled ("Profile both" in the Compare
// dialog), their timelines one above the other, each the canvas the playground's Timeline tab
// draws, on one time scale (zoom or pan one and the other follows) unless the person unticks it;
// under them, the time of each kind of op on A and on B, all devices together, and B's over A's.
import { el } from "../dom";
import type { ProfileEvent, RunEvent } from "../events";
import { duration, num, str } from "../format";
import { formatNumber, t, tn } from "../i18n";
import { fetchTrace } from "../profile/load";
import { TimelineView } from "../profile/render";
import { summaryOfEvent, summaryOfTrace, type DeviceSummary } from "../profile/summary";
import { kindLabel, type Trace } from "../profile/trace";
import { factList, keysHint, loadFailure, loadingProgress, profileNotices, sliceFacts, sliceTitle, zoomButtons } from "../panes/timeline";
import type { Pane } from "../panes/pane";
import type { ComparisonSide } from "../api";
import { pairKinds, profileOf, ratio } from "./model";

/** One side's timeline: its profile event, its trace once fetched, its canvas. */
class SideTimeline {
  event: ProfileEvent | null = null;
  trace: Trace | null = null;
  summary: DeviceSummary[] = [];
  loading: "none" | "loading" | "done" | "failed" = "none";
  readonly view: TimelineView;
  readonly element: HTMLElement;
  private readonly facts = el("span", "tl-facts");
  private readonly notes = el("div", "tl-notices");
  private readonly progress = el("div", "tl-progress");

  constructor(
    readonly side: ComparisonSide,
    onSelect: (side: SideTimeline, id: number | null) => void,
    onView: (side: SideTimeline, start: number, end: number) => void,
  ) {
    this.view = new TimelineView({
      label: t("Timeline of {side}, {label}", { side: side.name, label: side.label }),
      // The host and 8 devices, whole.
      maxHeight: 440,
      onSelect: (id) => onSelect(this, id),
      onView: (start, end) => onView(this, start, end),
    });
    this.progress.setAttribute("role", "status");
    this.progress.hidden = true;
    const heading = el("h2", "compare-column-heading", el("span", "side-name", side.name), side.label);
    this.element = el("section", "compare-timeline", el("div", "tl-head", heading, this.facts), this.notes, this.progress, this.view.element);
    this.element.setAttribute("aria-label", `${side.name}: ${side.label}`);
    this.element.hidden = true;
  }

  /** The side's events so far: its profile event, when it has come. */
  take(events: readonly RunEvent[]): void {
    const event = profileOf(events);
    if (!event || event === this.event) return;
    this.event = event;
    this.summary = summaryOfEvent(event);
    this.element.hidden = false;
    const devices = num(event.devices) ?? this.summary.length;
    const count = num(event.events);
    this.facts.textContent = [
      devices ? tn("{n} device", "{n} devices", devices, { n: devices }) : "",
      count !== null ? tn("{n} event", "{n} events", count, { n: formatNumber(count) }) : "",
    ]
      .filter(Boolean)
      .join(" · ");
    this.notes.replaceChildren();
    const { error, cut } = profileNotices(event);
    if (error) this.notes.append(el("p", "tl-notice tl-notice-error", el("strong", null, t("Profiling failed: ")), error));
    if (cut) this.notes.append(el("p", "tl-notice", cut));
    this.view.element.hidden = true;
  }

  /** Fetches the trace once; `done` when it is drawn. */
  async load(done: () => void): Promise<void> {
    const url = str(this.event?.url);
    if (!url || this.loading === "loading" || this.loading === "done") return;
    this.loading = "loading";
    const progress = loadingProgress(this.progress, num(this.event?.raw_bytes));
    this.progress.hidden = false;
    progress(0, true);
    try {
      const trace = await fetchTrace(url, {
        signal: new AbortController().signal,
        onProgress: (n) => progress(n),
        onReceived: () => this.view.markStart(),
      });
      this.trace = trace;
      if (!this.summary.length) this.summary = summaryOfTrace(trace);
      this.loading = "done";
      this.progress.hidden = true;
      this.view.element.hidden = false;
      this.view.setTrace(trace);
      done();
    } catch (error) {
      this.loading = "failed";
      this.progress.replaceChildren(...loadFailure(error, () => void this.load(done)));
    }
  }
}

export class TimelineCompare implements Pane {
  readonly id = "timeline";
  readonly title = t("Timeline");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  onPresent?: (present: boolean) => void;
  /** Its tab is there when a side was profiled. */
  readonly initiallyPresent = false;
  private readonly timelines: SideTimeline[];
  private readonly placeholder = el("div", "pane-placeholder");
  private readonly body = el("div", "tl-body");
  private readonly shared: HTMLInputElement;
  private readonly details = el("section", "tl-details");
  private readonly table = el("section", "tl-table");
  private visible = false;
  private profiled = 0;

  /** `runs`: A and B, their events as they come. */
  constructor(private readonly runs: readonly { data: ComparisonSide; events: RunEvent[]; finished: boolean }[]) {
    this.timelines = runs.map((s) => new SideTimeline(s.data, (side, id) => this.select(side, id), (side, a, b) => this.follow(side, a, b)));
    this.shared = el("input");
    this.shared.type = "checkbox";
    this.shared.checked = true;
    this.shared.id = "compare-shared-scale";
    this.shared.addEventListener("change", () => this.shareScale());
    const label = el("label", "compare-profile compare-shared", this.shared, t("One time scale for both"));
    label.htmlFor = this.shared.id;
    label.title = t("Zoom or pan one timeline and the other follows; Fit shows the longer run's span on both");
    const zoom = zoomButtons({
      zoom: (f) => this.each((v) => v.zoom(f)),
      fit: () => this.each((v) => v.fit()),
    });
    this.details.setAttribute("aria-live", "polite");
    this.details.setAttribute("aria-label", t("Selected slice"));
    this.details.hidden = true;
    this.body.append(
      el("div", "tl-head", label, el("span", "spacer"), zoom),
      ...this.timelines.map((t) => t.element),
      keysHint(),
      this.details,
      this.table,
    );
    this.element = el("div", "pane-scroll compare-pane timeline compare-timelines", this.placeholder, this.body);
    this.update();
  }

  reset(): void {}
  handle(): void {}

  shown(): void {
    this.visible = true;
    this.load();
  }

  /** The sides' events changed. */
  update(): void {
    this.timelines.forEach((t, i) => t.take(this.runs[i].events));
    const profiled = this.timelines.filter((t) => t.event !== null).length;
    this.placeholder.hidden = profiled > 0;
    this.body.hidden = profiled === 0;
    if (profiled === 0) {
      const done = this.runs.every((r) => r.finished);
      const how = t("Compare with {option} ticked (the playground's Compare dialog): each run then runs under jax.profiler, and their timelines show here one above the other, with the time of each kind of op on A and on B.");
      // The option's name in bold, where the sentence puts it.
      const [before, after = ""] = how.split("{option}");
      this.placeholder.replaceChildren(
        el("p", "pane-placeholder-title", done ? t("Neither run was profiled.") : t("No profile yet.")),
        el("p", null, before, el("strong", null, t("Profile both")), after),
      );
    }
    if (profiled !== this.profiled) {
      this.profiled = profiled;
      this.onPresent?.(profiled > 0);
      this.onChange?.(profiled || null);
      this.renderTable();
    }
    if (this.visible) this.load();
  }

  /** For tests and the console: each side's lanes and the table's rows. */
  describe(): { lanes: string[][]; kinds: { kind: string; a: number | null; b: number | null; ratio: string }[]; shared: boolean } {
    return {
      lanes: this.timelines.map((t) => t.trace?.lanes.map((l) => l.name) ?? []),
      kinds: this.kindRows().map((r) => ({ ...r, ratio: ratio(r.a, r.b) })),
      shared: this.shared.checked,
    };
  }

  /** Each side's view, µs after its trace's start (for tests). */
  views(): { start: number; end: number }[] {
    return this.timelines.map((t) => t.view.view());
  }

  private load(): void {
    for (const t of this.timelines) {
      void t.load(() => {
        this.shareScale();
        this.renderTable();
      });
    }
  }

  private each(act: (view: TimelineView) => void): void {
    const loaded = this.timelines.filter((t) => t.trace);
    // On one scale the other follows the first.
    (this.shared.checked ? loaded.slice(0, 1) : loaded).forEach((t) => act(t.view));
  }

  private shareScale(): void {
    const loaded = this.timelines.filter((t) => t.trace);
    const longest = Math.max(0, ...loaded.map((t) => t.view.ownSpan()));
    for (const t of loaded) {
      t.view.shareExtent(this.shared.checked ? longest : null);
      t.view.fit(false);
    }
  }

  private follow(from: SideTimeline, start: number, end: number): void {
    if (!this.shared.checked) return;
    for (const t of this.timelines) if (t !== from && t.trace) t.view.setView(start, end);
  }

  private select(side: SideTimeline, id: number | null): void {
    // One selection on the page: the other side's goes.
    for (const t of this.timelines) if (t !== side && t.view.selected !== null && id !== null) t.view.select(null);
    if (id === null || !side.trace) {
      if (this.timelines.every((t) => t.view.selected === null)) this.details.hidden = true;
      return;
    }
    this.details.hidden = false;
    const title = sliceTitle(side.trace, id);
    title.prepend(el("span", "side-name", side.side.name));
    this.details.replaceChildren(title, factList(sliceFacts(side.trace, id)));
  }

  private kindRows() {
    const [a, b] = this.timelines.map((t) => t.summary);
    return a.length || b.length ? pairKinds(a, b) : [];
  }

  private renderTable(): void {
    const rows = this.kindRows();
    this.table.hidden = rows.length === 0;
    if (!rows.length) return;
    const [a, b] = this.timelines.map((t) => t.side);
    const th = (content: string | Node, scope: "col" | "row", className?: string) => {
      const cell = el("th", className ?? null, content);
      cell.scope = scope;
      return cell;
    };
    const head = el(
      "tr",
      null,
      th(t("Kind of op"), "col"),
      th(el("span", null, el("span", "side-name", a.name), a.label), "col", "cell-num"),
      th(el("span", null, el("span", "side-name", b.name), b.label), "col", "cell-num"),
      th("B/A", "col", "cell-num"),
    );
    const body = el("tbody");
    for (const row of rows) {
      const cell = (us: number | null) => el("td", "cell-num", us === null ? "—" : duration(us / 1000));
      const total = row.kind.includes(",") || row.kind === "collective wait";
      body.append(el("tr", total ? "tl-total" : null, th(rowLabel(row.kind), "row", "cell-label"), cell(row.a), cell(row.b),
        el("td", "cell-num", ratio(row.a, row.b) || "—")));
    }
    const table = el("table", "data-table tl-kinds", el("caption", "visually-hidden", t("Time per kind of op, A and B")), el("thead", null, head), body);
    const wrap = el("div", "table-scroll tl-table-wrap", table);
    wrap.tabIndex = 0;
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", t("Time per kind of op, A and B"));
    this.table.replaceChildren(
      el("h2", "tl-table-title", t("Time per kind of op")),
      el("p", "tl-table-note", t("All devices together: the time each kind of top-level op took on A and on B, and B's over A's (below 1: B took less).")),
      wrap,
    );
  }
}

/** A row's name in the page's language: the totals, or an op kind ("fusion" -> 融合). */
function rowLabel(kind: string): string {
  if (kind === "busy, all devices") return t("busy, all devices");
  if (kind === "collective wait") return t("collective wait");
  return kindLabel(kind);
}
