// The "Timeline" tab: a run made with Profile on ran under jax.profiler, and its `profile` event
// says where its trace is. The summary (per device: busy and idle, collective wait, time per op
// kind, top ops) is a table at once, from the event: the keyboard's and the screen reader's view.
// The trace is fetched when the tab is first in view, with its progress, and drawn on a canvas
// (profile/render.ts): a lane per device under the host's, zoomed and panned as XProf's, opening
// on the devices' steps (0 shows the whole trace). Its keys work as soon as the tab is shown,
// while nothing else has the keyboard. A click on a slice shows it in a panel beside the canvas
// (under it on a narrow pane, scrolled into view); a device op links to its line of optimised
// HLO in the Compiled tab, a Python slice to its line of the snippet. The names the trace uses
// (lanes, rows, op kinds) are explained in a line each (profile/glossary.ts), and simulated CPU
// devices are named as such: what their collectives measure is threads waiting, not a network.
import { el } from "../dom";
import type { CompiledEvent, ProfileEvent, RunEvent } from "../events";
import { bytes, count, duration, num, percent, str } from "../format";
import { formatNumber, t, tn } from "../i18n";
import { TimelineView, type TimelineStats } from "../profile/render";
import { summaryOfEvent, summaryOfTrace, topOps, type DeviceSummary } from "../profile/summary";
import { fetchTrace } from "../profile/load";
import { kindNote, laneNote, opNote, rowNote, simulatedDevices } from "../profile/glossary";
import { COLLECTIVE, KINDS, WAIT, argNumber, argText, kindLabel, parseTrace, type Trace } from "../profile/trace";
import { findHlo } from "./compiled";
import { partsText } from "../explanations";
import { asName, sentence, type Pane } from "./pane";

/** What the pane's links ask of the page. */
export interface TimelineLinks {
  /** Shows instruction `op` of HLO module `module` in the Compiled tab; whether it could. */
  showHlo(module: string, op: string): boolean;
  /** Puts the editor's cursor on a snippet line. */
  goTo(line: number): void;
}

/** The kinds given a column of their own in the summary table; the rest are in the table below. */
const KIND_COLUMNS = 3;
const TOP_OPS = 10;

export class TimelinePane implements Pane {
  readonly id = "timeline";
  readonly title = t("Timeline");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  onPresent?: (present: boolean) => void;
  /** Its tab is there for a profiled run, or while runs are to be profiled. */
  readonly initiallyPresent = false;
  readonly view: TimelineView;

  private event: ProfileEvent | null = null;
  private compiled: CompiledEvent[] = [];
  private finished = false;
  private trace: Trace | null = null;
  private summary: DeviceSummary[] = [];
  /** The trace's fetch: none yet, on its way, done or failed. */
  private loading: "none" | "loading" | "done" | "failed" = "none";
  private abort: AbortController | null = null;

  private readonly placeholder = el("div", "pane-placeholder");
  private readonly body = el("div", "tl-body");
  private readonly facts = el("p", "tl-facts");
  private readonly notices = el("div", "tl-notices");
  private readonly progress = el("div", "tl-progress");
  private readonly stage = el("div", "tl-stage");
  private readonly legend = el("ul", "tl-legend");
  private readonly details = el("section", "tl-details");
  private readonly glossary = el("details", "tl-glossary");
  private readonly tables = el("div", "tl-tables");
  private readonly download = el("a", "button button-small tl-download", t("Download trace"));

  /** `profiling`: whether the next run is to be profiled (Profile beside Run is on). */
  constructor(
    private readonly links: TimelineLinks,
    private readonly profiling: () => boolean = () => false,
    label = t("Timeline of the run"),
  ) {
    this.view = new TimelineView({ label, onSelect: (id) => this.showDetails(id) });
    this.element = el("div", "pane-scroll timeline");
    this.progress.setAttribute("role", "status");
    this.details.setAttribute("aria-live", "polite");
    this.details.setAttribute("aria-label", t("Selected slice"));
    this.legend.setAttribute("aria-label", t("Colours of the op kinds"));
    this.download.title = t("The trace as a .json.gz file (Chrome Trace Event Format): Perfetto and chrome://tracing open it");

    const zoom = zoomButtons({
      zoom: (f) => this.view.zoom(f),
      fit: () => this.view.fit(),
      devices: () => this.view.frameDevices(),
    });
    const head = el("div", "tl-head", this.facts, el("span", "spacer"), this.download, zoom);
    this.stage.append(el("div", "tl-canvas-column", this.view.element, keysHint(true)), this.details);
    this.body.append(head, this.notices, this.progress, this.stage, this.legend, this.glossary, this.tables);
    this.element.append(this.placeholder, this.body);
    // The keys work as soon as the tab is shown: a key pressed while nothing else has the
    // keyboard (no field, no editor, no menu) goes to the timeline, as a click on it would.
    document.addEventListener("keydown", (e) => {
      if (e.defaultPrevented || !this.trace || !this.inView() || !freeForKeys(e.target, this.element)) return;
      this.view.handleKey(e);
    });
    this.reset();
  }

  reset(): void {
    this.abort?.abort();
    this.abort = null;
    this.event = null;
    this.compiled = [];
    this.finished = false;
    this.trace = null;
    this.summary = [];
    this.loading = "none";
    this.view.setTrace(null);
    this.render();
  }

  idle(): void {
    this.reset();
  }

  handle(event: RunEvent): void {
    if (event.type === "compiled") {
      this.compiled.push(event);
    } else if (event.type === "profile") {
      this.event = event;
      this.summary = summaryOfEvent(event);
      this.render();
      this.onChange?.(1);
      if (this.inView()) this.load();
    } else if (event.type === "finished") {
      this.finished = true;
      if (!this.event) this.render();
    }
  }

  shown(): void {
    this.load();
    this.view.schedule();
  }

  /**
   * Shows `data`, a trace, as if a run's profile had brought it (the console's and the
   * benchmarks' way in): `event` gives the profile event's fields, else the summary is worked
   * out from the trace. The time from the call to the first frame on screen is in the stats.
   */
  async showTrace(data: unknown, event: Partial<ProfileEvent> = {}): Promise<TimelineStats> {
    const started = performance.now();
    this.reset();
    this.event = { ...event, type: "profile", seq: 0, url: null };
    this.summary = summaryOfEvent(this.event);
    this.loading = "done";
    this.view.markStart(started);
    this.setTrace(parseTrace(data));
    this.onChange?.(1);
    for (let i = 0; i < 600 && this.view.stats().firstDrawMs === null; i++) {
      await new Promise((resolve) => requestAnimationFrame(resolve));
    }
    return this.view.stats();
  }

  stats(): TimelineStats {
    return this.view.stats();
  }

  /** Where the widest slice in view of that name, kind and lane is on the page (for tests):
   *  `hlo`, one with an HLO op; `compiled`, one whose HLO op the Compiled tab has. */
  locate(query: { name?: string; kind?: string; lane?: string; hlo?: boolean; compiled?: boolean }): ReturnType<TimelineView["locate"]> {
    const trace = this.trace;
    if (!trace) return null;
    const known = new Map<string, boolean>();
    const compiled = (id: number) => {
      const module = argText(trace, id, "hlo_module");
      const op = argText(trace, id, "hlo_op");
      if (!module || !op) return false;
      const key = `${module}\u0000${op}`;
      if (!known.has(key)) known.set(key, findHlo(this.compiled, module, op)?.line != null);
      return known.get(key)!;
    };
    return this.view.locate(
      (id) =>
        (query.name === undefined || trace.names[id] === query.name) &&
        (query.kind === undefined || KINDS[trace.kind[id]] === query.kind) &&
        (query.lane === undefined || trace.lanes[trace.lane[id]].name === query.lane) &&
        (query.hlo === undefined || (argText(trace, id, "hlo_op") !== null) === query.hlo) &&
        (query.compiled === undefined || compiled(id) === query.compiled),
    );
  }

  /** The trace's lanes' names, in order (for tests). */
  lanes(): string[] {
    return this.trace?.lanes.map((lane) => lane.name) ?? [];
  }

  private inView(): boolean {
    return this.element.isConnected && this.element.offsetParent !== null;
  }

  // ---- The trace ------------------------------------------------------------------------

  /** Fetches the trace once, when there is one to fetch. */
  private load(): void {
    const url = str(this.event?.url);
    if (!url || this.loading === "loading" || this.loading === "done") return;
    void this.fetchTrace(url);
  }

  private async fetchTrace(url: string): Promise<void> {
    const abort = new AbortController();
    this.abort = abort;
    this.loading = "loading";
    const progress = loadingProgress(this.progress, num(this.event?.raw_bytes));
    this.progress.hidden = false;
    progress(0, true);
    try {
      const loaded = await fetchTrace(url, {
        signal: abort.signal,
        onProgress: (n) => progress(n),
        onReceived: () => this.view.markStart(),
        onBuilding: () => this.progress.replaceChildren(el("span", "spinner"), t("building the timeline…")),
      });
      if (abort.signal.aborted) return;
      this.loading = "done";
      this.progress.hidden = true;
      this.setTrace(loaded);
    } catch (error) {
      if (abort.signal.aborted) return;
      this.loading = "failed";
      this.progress.replaceChildren(...loadFailure(error, () => this.load()));
    } finally {
      if (this.abort === abort) this.abort = null;
    }
  }

  private setTrace(trace: Trace): void {
    this.trace = trace;
    if (!this.summary.length) this.summary = summaryOfTrace(trace);
    this.view.setTrace(trace);
    this.render();
  }

  // ---- Rendering ------------------------------------------------------------------------

  /** Its tab is there, or not, as the run shown and Profile beside Run say. */
  present(): void {
    this.onPresent?.(this.event !== null || this.profiling());
  }

  private render(): void {
    this.present();
    const event = this.event;
    this.placeholder.hidden = event !== null;
    this.body.hidden = event === null;
    if (event === null) {
      this.renderPlaceholder();
      return;
    }
    this.renderFacts(event);
    this.renderNotices(event);
    const error = str(event.error);
    this.stage.hidden = this.trace === null;
    this.legend.hidden = this.trace === null;
    this.details.hidden = this.trace === null;
    this.glossary.hidden = this.trace === null;
    this.progress.hidden = this.loading !== "loading" && this.loading !== "failed";
    if (this.loading === "none" && !error && !str(event.url) && !this.trace) this.progress.hidden = true;
    const url = str(event.url);
    this.download.hidden = url === null;
    // The server names the file and sends it as one (?download=1).
    if (url) this.download.href = `${url}${url.includes("?") ? "&" : "?"}download=1`;
    this.renderLegend();
    this.renderGlossary();
    this.renderDetails(this.view.selected);
    this.renderTables();
  }

  private renderPlaceholder(): void {
    this.placeholder.replaceChildren(
      el("p", "pane-placeholder-title", this.finished ? t("This run was not profiled.") : t("No profile yet.")),
      el(
        "p",
        null,
        ...sentence(
          t("Turn on {profile} beside Run and run again: the run then runs under {profiler}, and this tab shows what each device did, op by op, on a timeline: its busy and idle time, the time per kind of op, and which device waited for which collective."),
          { profile: el("strong", null, t("Profile")), profiler: el("code", null, "jax.profiler") },
        ),
      ),
    );
  }

  private renderFacts(event: ProfileEvent): void {
    const parts: string[] = [];
    const devices = num(event.devices) ?? this.summary.length;
    if (devices) parts.push(tn("{n} device", "{n} devices", devices, { n: formatNumber(devices) }));
    const events = num(event.events) ?? this.trace?.count ?? null;
    if (events !== null) parts.push(tn("{n} event", "{n} events", events, { n: formatNumber(events) }));
    if (this.trace) parts.push(t("{time} traced", { time: duration((this.trace.end - this.trace.start) / 1000) }));
    const raw = num(event.raw_bytes);
    const gz = num(event.bytes);
    if (raw !== null) {
      parts.push(gz !== null
        ? t("trace {size} ({gzipped} gzipped)", { size: bytes(raw), gzipped: bytes(gz) })
        : t("trace {size}", { size: bytes(raw) }));
    }
    const cost = num(event.profile_ms);
    this.facts.replaceChildren(el("strong", null, t("Profile")), parts.length ? ` · ${parts.join(" · ")}` : "");
    if (cost !== null) {
      const c = el("span", "tl-cost", ` · ${t("profiling cost {time}", { time: duration(cost) })}`);
      c.title = t("Stopping the profiler and converting its trace, inside the run's own wall time");
      this.facts.append(c);
    }
  }

  private renderNotices(event: ProfileEvent): void {
    this.notices.replaceChildren();
    const { error, cut } = profileNotices(event, this.trace?.cut || null, this.trace?.cutParts ?? null);
    if (error) {
      const p = el("p", "tl-notice tl-notice-error", el("strong", null, t("Profiling failed: ")), error);
      p.setAttribute("role", "alert");
      this.notices.append(p);
    }
    if (cut) this.notices.append(el("p", "tl-notice", cut));
    const simulated = this.simulatedCount();
    if (simulated) {
      const p = el("p", "tl-notice tl-notice-info tl-simulated", el("strong", null, t("Simulated devices. ")),
        t("These {n} devices are {n} threads of one CPU: an all-reduce here measures waiting, not a network. The time collectives take, and its share, say how the threads kept pace with one another, not how fast devices would talk.", { n: formatNumber(simulated) }));
      this.notices.append(p);
    }
  }

  /** The devices' names: the summary's, else the trace's device lanes'. */
  private deviceNames(): string[] {
    if (this.summary.length) return this.summary.map((row) => row.device);
    return this.trace?.lanes.filter((lane) => lane.device).map((lane) => lane.name) ?? [];
  }

  /** How many simulated devices the run had (0: real ones, or one). */
  private simulatedCount(): number {
    const names = this.deviceNames();
    return simulatedDevices(this.trace, names) ? names.length : 0;
  }

  private simulated(): boolean {
    return this.simulatedCount() > 0;
  }

  /** What the names on the timeline mean: its lanes, rows and op kinds, a line each. */
  private renderGlossary(): void {
    const trace = this.trace;
    this.glossary.replaceChildren();
    if (!trace) return;
    const simulated = this.simulated();
    const dl = el("dl", "tl-glossary-list");
    const add = (term: string, note: string | null, swatch?: string) => {
      if (!note) return;
      const dt = el("dt", null);
      if (swatch) {
        const chip = el("span", "tl-swatch");
        chip.style.setProperty("--swatch", `var(--tl-${swatch})`);
        dt.append(chip, " ");
      }
      dt.append(asName(el("span", null, term)));
      dl.append(dt, el("dd", null, note));
    };
    const lanes = new Set<string>();
    for (const lane of trace.lanes) {
      // One line for a run of devices of one kind: "TFRT_CPU_0 … TFRT_CPU_7".
      const note = laneNote(lane.name, simulated);
      const key = note ?? lane.name;
      if (lanes.has(key)) continue;
      lanes.add(key);
      const alike = trace.lanes.filter((other) => laneNote(other.name, simulated) === note && note !== null);
      add(alike.length > 1 ? `${alike[0].name} … ${alike[alike.length - 1].name}` : lane.name, note);
    }
    const rows = new Set<string>();
    for (const lane of trace.lanes) for (const row of lane.rows) rows.add(row.name.replace(/\s+\d+$/, ""));
    for (const row of rows) add(row, rowNote(row));
    const used = new Set<number>();
    for (let i = 0; i < trace.count; i++) used.add(trace.kind[i]);
    KINDS.forEach((kind, i) => {
      if (used.has(i)) add(kindLabel(kind), kindNote(kind), kind);
    });
    const summary = el("summary", null, t("What the names mean"));
    this.glossary.append(summary, dl);
  }

  private renderLegend(): void {
    this.legend.replaceChildren();
    const trace = this.trace;
    if (!trace) return;
    const used = new Set<number>();
    for (let i = 0; i < trace.count; i++) used.add(trace.kind[i]);
    KINDS.forEach((kind, i) => {
      if (!used.has(i)) return;
      const swatch = el("span", `tl-swatch${i === WAIT ? " tl-swatch-wait" : ""}`);
      swatch.style.setProperty("--swatch", `var(--tl-${kind})`);
      const item = el("li", null, swatch, kind === "wait" ? t("wait (hatched)") : kindLabel(kind));
      item.title = i === COLLECTIVE ? `${kindNote(kind)} ${t("A collective's wait for its peers is hatched")}` : kindNote(kind) ?? "";
      this.legend.append(item);
    });
  }

  // ---- The selected slice ---------------------------------------------------------------

  private showDetails(id: number | null): void {
    this.renderDetails(id);
    // Beside the canvas it is in view already; under it (a narrow pane), it is brought up.
    if (id === null || !this.inView()) return;
    const below = this.details.getBoundingClientRect().top >= this.view.element.getBoundingClientRect().bottom;
    if (below) this.details.scrollIntoView({ block: "nearest" });
  }

  private renderDetails(id: number | null): void {
    const trace = this.trace;
    if (id === null || !trace) {
      this.details.replaceChildren(
        el("h2", "tl-details-title", t("Selected slice")),
        el("p", "tl-details-hint", t("Click a slice for its details: what it is, how long it took, and its line of HLO or code.")),
      );
      return;
    }
    const rows = sliceFacts(trace, id, this.simulated());
    const parent = trace.parent[id];
    // A wait links to the op it lies in (a collective's rendezvous names no HLO op of its own).
    const linked = argText(trace, id, "hlo_op") === null && trace.kind[id] === WAIT && parent >= 0 ? parent : id;
    const module = argText(trace, linked, "hlo_module");
    const op = argText(trace, linked, "hlo_op");
    const file = argText(trace, id, "file");
    const line = argNumber(trace, id, "line");

    const actions = el("div", "tl-details-actions");
    const found = module && op ? findHlo(this.compiled, module, op) : null;
    let sourceLine = line !== null && (!file || file === "<snippet>") ? line : null;
    if (found) {
      const show = el("button", "button button-small", t("Show in Compiled"));
      show.type = "button";
      const where = found.line !== null
        ? t("Line {line} of {module}'s optimised HLO", { line: found.line, module: module! })
        : t("{module}'s optimised HLO", { module: module! });
      show.title = linked !== id ? t("{where}: {op}, which this wait lies in", { where, op: op! }) : where;
      show.addEventListener("click", () => this.links.showHlo(module!, op!));
      actions.append(show);
      if (found.source !== null) sourceLine = found.source;
      if (found.line !== null) rows.push([t("HLO line"), `${found.line}`]);
    } else if (module && op) {
      actions.append(el("span", "tl-details-note", t("No compilation of {module} in this run's Compiled tab.", { module })));
    }
    if (sourceLine !== null) {
      const go = el("button", "button button-small", t("Line {line} in the editor", { line: sourceLine }));
      go.type = "button";
      go.addEventListener("click", () => this.links.goTo(sourceLine!));
      actions.append(go);
    }

    this.details.replaceChildren(sliceTitle(trace, id), factList(rows));
    if (actions.childElementCount) this.details.append(actions);
    // A collective (or the wait in one) on every device: who waited for whom.
    const collective = trace.kind[id] === COLLECTIVE ? id : parent >= 0 && trace.kind[parent] === COLLECTIVE ? parent : null;
    if (collective !== null) {
      const peers = this.peers(collective);
      if (peers.length > 1) this.details.append(peersTable(trace, collective, peers));
    }
  }

  /** The same collective (its name and run) on every device: who waited for whom. */
  private peers(id: number): number[] {
    const trace = this.trace!;
    const name = trace.names[id];
    const run = trace.args[id]?.run_id;
    const out: number[] = [];
    for (let i = 0; i < trace.count; i++) {
      if (trace.names[i] !== name || trace.kind[i] !== COLLECTIVE) continue;
      if (run !== undefined && trace.args[i]?.run_id !== run) continue;
      out.push(i);
    }
    // One per device lane: the one nearest in time to the selected.
    const byLane = new Map<number, number>();
    for (const i of out) {
      const best = byLane.get(trace.lane[i]);
      if (best === undefined || Math.abs(trace.ts[i] - trace.ts[id]) < Math.abs(trace.ts[best] - trace.ts[id])) byLane.set(trace.lane[i], i);
    }
    return [...byLane.values()].sort((a, b) => trace.lane[a] - trace.lane[b]);
  }

  // ---- The tables -----------------------------------------------------------------------

  private renderTables(): void {
    this.tables.replaceChildren();
    if (!this.summary.length) return;
    this.tables.append(summaryTable(this.summary, this.simulatedCount()));
    const ops = topOps(this.summary, TOP_OPS);
    if (ops.length) this.tables.append(opsTable(ops, this.summary, this.simulatedCount()));
  }
}

/** The keys and the mouse, as a line under the canvas (`devices`: F frames the devices' steps). */
export function keysHint(devices = false): HTMLElement {
  const key = (name: string) => el("kbd", null, name);
  const keys = { w: key("W"), s: key("S"), a: key("A"), d: key("D"), fit: key("0"), f: key("F"), ctrl: key("Ctrl") };
  return el(
    "p",
    "tl-keys",
    ...(devices
      ? sentence(t("{w}{s} zoom · {a}{d} pan · {f} devices' steps · {fit} whole trace · drag to pan · {ctrl}+wheel to zoom · click a slice for its details"), keys)
      : sentence(t("{w}{s} zoom · {a}{d} pan · {fit} fit · drag to pan · {ctrl}+wheel to zoom · click a slice for its details"), keys)),
  );
}

/** Whether a key pressed on `target` is free for the timeline: it is on the page's body, the
 *  pane itself or a tab, not in a field, the editor, a menu or a dialog. */
function freeForKeys(target: EventTarget | null, pane: HTMLElement): boolean {
  if (!(target instanceof Element) || target === document.body || target === document.documentElement) return true;
  if (target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], .monaco-editor, dialog, [role=menu], .menu")) return false;
  if (pane.contains(target)) return !target.closest("button, a");
  return target.getAttribute("role") === "tab";
}

/** Zoom in, Zoom out and Fit, as buttons; with `devices`, Devices' steps and Whole trace, named. */
export function zoomButtons(act: { zoom(factor: number): void; fit(): void; devices?(): void }): HTMLElement {
  const button = (text: string, title: string, glyph: string, onClick: () => void) => {
    const b = el("button", "button button-small button-icon tl-zoom", el("span", "tl-zoom-glyph", glyph));
    b.type = "button";
    b.setAttribute("aria-label", text);
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  };
  const named = (text: string, title: string, className: string, onClick: () => void) => {
    const b = el("button", `button button-small ${className}`, text);
    b.type = "button";
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  };
  const devices = act.devices;
  return el(
    "div",
    "tl-zoom-buttons",
    button(t("Zoom in"), t("Zoom in (W)"), "+", () => act.zoom(0.6)),
    button(t("Zoom out"), t("Zoom out (S)"), "−", () => act.zoom(1 / 0.6)),
    ...(devices
      ? [
          named(t("Devices' steps"), t("Frame the devices' work, from their first op to their last (F)"), "tl-frame-devices", () => devices()),
          named(t("Whole trace"), t("Show the whole trace: Python and XLA's compile on the host too (0)"), "tl-whole", () => act.fit()),
        ]
      : [button(t("Fit"), t("Show the whole run (0)"), "⤢", () => act.fit())]),
  );
}

/** What a slice is: where, when, how long; a collective's wait; its HLO op; its args. */
export function sliceFacts(trace: Trace, id: number, simulated = false): [string, Node | string][] {
  const lane = trace.lanes[trace.lane[id]];
  const row = lane.rows[trace.row[id]];
  const start = trace.ts[id] - trace.start;
  const dur = trace.dur[id];
  const kind = KINDS[trace.kind[id]];
  // What it is, in words: its own name's pattern, else its kind's; and its lane's and row's.
  const what = opNote(trace.names[id]) ?? kindNote(kind);
  const where = [laneNote(lane.name, simulated), rowNote(row.name)].filter((x): x is string => x !== null);
  const rows: [string, Node | string][] = [
    ...(what ? [[t("what"), el("span", "tl-note", what)] as [string, Node]] : []),
    // The lane's and the thread's names are the trace's own.
    [t("where"), el("span", null, asName(el("span", null, `${lane.name} · ${row.name}`)), ...where.map((note) => el("span", "tl-where-note", note)))],
    [t("start"), t("{time} into the trace", { time: duration(start / 1000) })],
    [t("duration"), duration(dur / 1000)],
  ];
  const wait = argNumber(trace, id, "wait_us");
  if (trace.kind[id] === COLLECTIVE && wait !== null) {
    rows.push([t("waited"), t("{time} for its peers ({share} of it)", { time: duration(wait / 1000), share: percent(dur > 0 ? wait / dur : 0) })]);
  }
  if (simulated && (trace.kind[id] === COLLECTIVE || trace.kind[id] === WAIT)) {
    rows.push([t("on simulated devices"), el("span", "tl-note", t("the peers are threads of one CPU: this is waiting for them, not a network"))]);
  }
  const parent = trace.parent[id];
  if (trace.kind[id] === WAIT && parent >= 0) rows.push([t("waiting in"), el("code", null, trace.names[parent])]);
  const module = argText(trace, id, "hlo_module");
  const op = argText(trace, id, "hlo_op");
  const opcode = argText(trace, id, "opcode");
  if (module) rows.push([t("HLO module"), el("code", null, module)]);
  if (op) rows.push([t("HLO op"), el("span", null, el("code", null, op), opcode ? ` (${opcode})` : "")]);
  const file = argText(trace, id, "file");
  const line = argNumber(trace, id, "line");
  if (file && file !== "<snippet>") rows.push([t("file"), line !== null ? `${file}:${line}` : file]);
  const known = new Set(["hlo_module", "hlo_op", "opcode", "wait_us", "file", "line", "device", "run_id"]);
  for (const [k, v] of Object.entries(trace.args[id] ?? {})) {
    if (known.has(k) || rows.length > 14) continue;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") rows.push([k, String(v)]);
  }
  return rows;
}

/** A slice's name and its kind, as the details' heading. */
export function sliceTitle(trace: Trace, id: number): HTMLElement {
  const kind = KINDS[trace.kind[id]];
  const chip = el("span", "chip tl-kind-chip", kindLabel(kind));
  chip.style.setProperty("--swatch", `var(--tl-${kind})`);
  const name = trace.names[id] ? asName(el("span", "tl-details-name", trace.names[id])) : el("span", "tl-details-name", t("(unnamed)"));
  return el("h2", "tl-details-title", name, chip);
}

export function factList(rows: [string, Node | string][]): HTMLElement {
  const dl = el("dl", "kv tl-kv");
  for (const [k, v] of rows) dl.append(el("dt", null, k), el("dd", null, v));
  return dl;
}

/** Says in `into` how much of a trace has come ("Loading trace… 1.2 MB of 3.4 MB"), at most
 *  every 120 ms unless `force`d. */
export function loadingProgress(into: HTMLElement, expected: number | null): (received: number, force?: boolean) => void {
  let shownAt = -Infinity;
  return (received, force = false) => {
    const now = performance.now();
    if (!force && now - shownAt < 120) return;
    shownAt = now;
    into.replaceChildren(el("span", "spinner"), expected
      ? t("Loading trace… {received} of {expected}", { received: bytes(received), expected: bytes(expected) })
      : t("Loading trace… {received}", { received: bytes(received) }));
  };
}

/** Why a trace could not be loaded, and Try again. */
export function loadFailure(error: unknown, retry: () => void): Node[] {
  const button = el("button", "link-button", t("Try again"));
  button.type = "button";
  button.addEventListener("click", retry);
  const why = error instanceof Error ? error.message : String(error);
  return [el("span", "tl-error-text", t("Could not load the trace: {why}. ", { why })), button];
}

function withTitle<T extends HTMLElement>(element: T, title: string | null): T {
  if (title) element.title = title;
  return element;
}

function us(value: number): string {
  return duration(value / 1000);
}

function th(text: string | Node, scope: "col" | "row", className?: string): HTMLTableCellElement {
  const cell = el("th", className ?? null, text);
  cell.scope = scope;
  return cell;
}

function scrollable(table: HTMLTableElement, label: string): HTMLElement {
  // A narrow pane scrolls the table sideways: a region the keyboard can scroll too.
  const wrap = el("div", "table-scroll tl-table-wrap", table);
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", label);
  return wrap;
}

/** One row per device: span, busy and idle (and their shares), collective wait, the largest
 *  kinds of op, and the device's top op. */
function summaryTable(rows: DeviceSummary[], simulated = 0): HTMLElement {
  const totals = new Map<string, number>();
  for (const row of rows) for (const [kind, time] of row.kinds) totals.set(kind, (totals.get(kind) ?? 0) + time);
  const kinds = [...totals].sort((a, b) => b[1] - a[1]).slice(0, KIND_COLUMNS).map(([k]) => k);

  const head = el(
    "tr",
    null,
    th(t("Device"), "col"),
    th(t("Busy"), "col", "cell-num"),
    th(t("Idle"), "col", "cell-num"),
    th(t("Collective wait"), "col", "cell-num"),
    ...kinds.map((k) => th(kindLabel(k), "col", "cell-num")),
  );
  const body = el("tbody");
  for (const row of rows) {
    const share = row.span > 0 ? row.busy / row.span : null;
    const busy = el("td", "cell-num tl-busy", us(row.busy), share !== null ? el("span", "tl-share", percent(share)) : "");
    if (share !== null) {
      const bar = el("span", "tl-bar");
      bar.style.setProperty("--share", String(Math.min(1, Math.max(0, share))));
      bar.setAttribute("aria-hidden", "true");
      busy.append(bar);
    }
    const idle = row.span > 0 ? Math.max(0, row.span - row.busy) : null;
    const kindCells = kinds.map((k) => {
      const time = row.kinds.find(([kind]) => kind === k)?.[1];
      return el("td", "cell-num", time === undefined ? "—" : us(time));
    });
    body.append(
      el(
        "tr",
        null,
        asName(th(row.device, "row", "cell-label")),
        busy,
        el("td", "cell-num", idle === null ? "—" : us(idle), idle !== null && row.span > 0 ? el("span", "tl-share", percent(idle / row.span)) : ""),
        el("td", "cell-num", row.wait > 0 ? us(row.wait) : "—"),
        ...kindCells,
      ),
    );
  }
  const caption = el("caption", "visually-hidden", t("Per device"));
  const note = el(
    "p",
    "tl-table-note",
    t("Busy is the time a device's top-level ops took, idle the rest of its span; collective wait, what its collectives spent waiting for their peers; then the kinds of op that took the most time."),
  );
  if (simulated) {
    note.append(" ", el("strong", "tl-table-simulated", t("Measured on {n} simulated devices, threads of one CPU: collective time here is threads waiting for one another, not a network.", { n: formatNumber(simulated) })));
  }
  const table = el("table", "data-table tl-summary", caption, el("thead", null, head), body);
  return el("section", "tl-table", el("h2", "tl-table-title", t("Per device")), note, scrollable(table, t("Per device")));
}

/** The ops that took the most time, all devices together. */
function opsTable(ops: ReturnType<typeof topOps>, rows: DeviceSummary[], simulated = 0): HTMLElement {
  const busy = rows.reduce((n, r) => n + r.busy, 0);
  const head = el(
    "tr",
    null,
    th(t("Op"), "col"),
    th(t("Kind"), "col"),
    th(t("Calls"), "col", "cell-num"),
    th(t("Devices"), "col", "cell-num"),
    th(t("Total"), "col", "cell-num"),
    th(t("Share of busy"), "col", "cell-num"),
  );
  const body = el("tbody");
  for (const op of ops) {
    body.append(
      el(
        "tr",
        null,
        withTitle(asName(th(op.name, "row", "cell-label")), opNote(op.name) ?? kindNote(op.kind)),
        withTitle(el("td", null, kindLabel(op.kind)), kindNote(op.kind)),
        // A plain number in the locale's form; a large one with its SI prefix (1.20 k).
        el("td", "cell-num", op.count < 1000 ? formatNumber(op.count) : count(op.count)),
        el("td", "cell-num", formatNumber(op.devices)),
        el("td", "cell-num", us(op.total)),
        el("td", "cell-num", busy > 0 ? percent(op.total / busy) : "—"),
      ),
    );
  }
  const caption = el("caption", "visually-hidden", t("Top ops"));
  const note = el("p", "tl-table-note", t("The {n} ops that took the most time, all devices together.", { n: formatNumber(ops.length) }));
  if (simulated && ops.some((op) => op.kind === "collective")) {
    note.append(" ", el("strong", "tl-table-simulated", t("On {n} threads of one CPU a collective's time is mostly waiting for the slowest thread: it would not take that share on real devices.", { n: formatNumber(simulated) })));
  }
  const table = el("table", "data-table tl-ops", caption, el("thead", null, head), body);
  return el("section", "tl-table", el("h2", "tl-table-title", t("Top ops")), note, scrollable(table, t("Top ops")));
}

/** A collective on each device: when it began, what it waited, how long it took. */
function peersTable(trace: Trace, selected: number, peers: number[]): HTMLElement {
  const first = Math.min(...peers.map((i) => trace.ts[i]));
  const head = el("tr", null, th(t("Device"), "col"), th(t("Began"), "col", "cell-num"), th(t("Waited"), "col", "cell-num"), th(t("Took"), "col", "cell-num"));
  const body = el("tbody");
  for (const i of peers) {
    const wait = argNumber(trace, i, "wait_us");
    const tr = el(
      "tr",
      i === selected ? "tl-peer-selected" : null,
      asName(th(trace.lanes[trace.lane[i]].name, "row", "cell-label")),
      el("td", "cell-num", trace.ts[i] === first ? t("first") : `+${us(trace.ts[i] - first)}`),
      el("td", "cell-num", wait === null ? "—" : us(wait)),
      el("td", "cell-num", us(trace.dur[i])),
    );
    body.append(tr);
  }
  const caption = el("caption", null, ...sentence(t("{op} on each device: the last to arrive waited least."), {
    op: el("code", null, trace.names[selected]),
  }));
  return scrollable(el("table", "data-table tl-peers", caption, el("thead", null, head), body),
    t("{op} on each device", { op: trace.names[selected] }));
}

/** Why a profile has no trace, and what of its trace was cut, in the page's language when their
 *  sentences came with them (executor/runner/profile.py); else as sent. */
export function profileNotices(event: ProfileEvent, tracesCut: string | null = null,
  tracesCutParts: unknown = null): { error: string | null; cut: string | null } {
  const error = str(event.error);
  const cut = str(event.cut) ?? tracesCut;
  const cutSaid = partsText(str(event.cut) !== null ? event.cut_parts : tracesCutParts);
  return {
    error: error === null ? null : (partsText(event.error_parts)?.join("") ?? error),
    cut: cut === null ? null : (cutSaid ? cutSaid.reduce((first, next) => t("{first}; {next}", { first, next })) : cut),
  };
}
