// A code cell's results, under it: the run's line (status, wall time, where it ran, messages) and
// the result panes the playground has (Output, Compiled, Timing, Figures, and Timeline when the
// cell's run was profiled) under a tab bar of the cell's own. The panes are made at the cell's first run (a notebook of fifty cells does not
// build two hundred of them up front); their ids are made the cell's own, so that the page's
// ids stay unique and the ARIA links between a tab and its panel hold.
import { el } from "../dom";
import type { RunEvent } from "../events";
import { t } from "../i18n";
import { CompiledPane } from "../panes/compiled";
import { FiguresPane } from "../panes/figures";
import { OutputPane } from "../panes/output";
import type { Pane } from "../panes/pane";
import { TimelinePane } from "../panes/timeline";
import { TimingPane } from "../panes/timing";
import type { RunView } from "../run";
import { StatusLine } from "../status";

export interface ResultsHost {
  /** Shows a line of the cell's code (an error's line, a figure's). */
  revealLine(line: number): void;
  /** Marks the cell's line a piece of compiled code came from (null: none). */
  linkLine(line: number | null, reveal: boolean): void;
}

export class CellResults implements RunView {
  readonly element: HTMLElement;
  readonly status: StatusLine;
  private readonly bar: HTMLElement;
  private readonly panels: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private panes: Pane[] = [];
  private tabs = new Map<string, HTMLButtonElement>();
  private panelOf = new Map<string, HTMLElement>();
  private counts = new Map<string, number>();
  private selected = "output";
  private compiledPane: CompiledPane | null = null;
  private collapsed = false;

  constructor(
    private readonly prefix: string,
    private readonly host: ResultsHost,
    label: string,
  ) {
    const badge = el("span", "status-badge");
    badge.hidden = true;
    const wall = el("span", "wall-time");
    const info = el("span", "run-info");
    const message = el("span", "run-message");
    message.setAttribute("role", "status");
    this.status = new StatusLine(badge, wall, info, message);

    this.bar = el("div", "tabs cell-tabs");
    this.bar.setAttribute("role", "tablist");
    this.bar.setAttribute("aria-label", t("{label}: result views", { label }));
    this.bar.addEventListener("keydown", (e) => this.onKey(e));
    this.toggle = el("button", "button button-quiet button-small cell-results-toggle", t("Hide"));
    this.toggle.type = "button";
    this.toggle.setAttribute("aria-expanded", "true");
    this.toggle.title = t("Hide or show this cell's results");
    this.toggle.addEventListener("click", () => this.setCollapsed(!this.collapsed));
    const summary = el("div", "run-summary", badge, wall);
    const head = el("div", "cell-results-head", this.bar, el("div", "cell-run-line", info, summary), this.toggle);
    this.panels = el("div", "cell-panels");
    this.element = el("section", "cell-results", head, message, this.panels);
    this.element.setAttribute("aria-label", t("{label}: results", { label }));
    this.element.hidden = true;
  }

  /** The cell's name changed (it moved): its results' names follow. */
  setLabel(label: string): void {
    this.bar.setAttribute("aria-label", t("{label}: result views", { label }));
    this.element.setAttribute("aria-label", t("{label}: results", { label }));
  }

  /** The Compiled pane, once the cell has run. */
  get compiled(): CompiledPane | null {
    return this.compiledPane;
  }

  /** Shows the source line a compiled line came from, as the editor's cursor moves. */
  showSourceLine(line: number): void {
    this.compiledPane?.showSourceLine(line);
  }

  select(id: string): void {
    if (!this.tabs.has(id)) return;
    this.selected = id;
    for (const [paneId, tab] of this.tabs) {
      const on = paneId === id;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
      if (on) delete tab.dataset.news;
      this.panelOf.get(paneId)!.hidden = !on;
    }
    if (this.collapsed) this.setCollapsed(false);
    this.panes.find((p) => p.id === id)?.shown?.();
  }

  reset(): void {
    this.build();
    this.element.hidden = false;
    for (const pane of this.panes) {
      pane.reset();
      pane.onChange?.(null);
      pane.onAlert?.(null);
    }
    this.select("output");
    this.scopeIds();
  }

  handle(event: RunEvent): void {
    for (const pane of this.panes) pane.handle(event);
    // A run that went wrong is shown where it says why.
    if (event.type === "finished" && event.status !== "succeeded" && event.status !== "cancelled") this.select("output");
    this.scopeIds();
  }

  idle(): void {
    for (const pane of this.panes) {
      pane.idle?.();
      pane.onChange?.(null);
      pane.onAlert?.(null);
    }
    this.status.clear();
    this.element.hidden = true;
  }

  /** Nothing to show (a cell whose run is gone, a cell made again). */
  clear(): void {
    this.idle();
  }

  private build(): void {
    if (this.panes.length) return;
    const reveal = (line: number) => this.host.revealLine(line);
    this.compiledPane = new CompiledPane({ highlight: (line, r) => this.host.linkLine(line, r), goTo: reveal });
    const output = new OutputPane(
      reveal,
      () => this.panes.filter((p) => p.id !== "output").map((p) => ({ id: p.id, title: p.title, count: this.counts.get(p.id) ?? 0 })),
      (id) => this.select(id),
    );
    const compiled = this.compiledPane;
    const timeline = new TimelinePane({
      showHlo: (module, op) => {
        this.select(compiled.id);
        return compiled.revealHlo(module, op);
      },
      goTo: reveal,
    });
    this.panes = [output, this.compiledPane, new TimingPane(), new FiguresPane(reveal), timeline];
    for (const pane of this.panes) this.add(pane);
  }

  private add(pane: Pane): void {
    const tab = el("button", "tab", el("span", null, pane.title));
    tab.type = "button";
    tab.id = `${this.prefix}-tab-${pane.id}`;
    tab.dataset.pane = pane.id;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", `${this.prefix}-panel-${pane.id}`);
    const count = el("span", "tab-count");
    count.hidden = true;
    const alert = el("span", "tab-alert visually-hidden");
    alert.hidden = true;
    tab.append(count, alert);
    tab.addEventListener("click", () => {
      if (this.selected === pane.id && !this.collapsed) this.setCollapsed(true);
      else this.select(pane.id);
    });
    // A cell's Timeline is there when its run was profiled: an empty one would be on every cell.
    const onlyWhenFull = pane.id === "timeline";
    tab.hidden = onlyWhenFull;
    pane.onChange = (n) => {
      if (onlyWhenFull) tab.hidden = !n;
      const before = this.counts.get(pane.id) ?? 0;
      this.counts.set(pane.id, n ?? 0);
      const shown = n !== null && (n > 0 || pane.showsZero === true);
      count.hidden = !shown;
      count.textContent = shown ? String(n) : "";
      tab.dataset.empty = String(!n && pane.id !== "output");
      if (!n) delete tab.dataset.news;
      else if (n > before && this.selected !== pane.id) tab.dataset.news = "true";
    };
    pane.onAlert = (text) => {
      alert.hidden = text === null;
      alert.textContent = text ? t(" ({alert})", { alert: text }) : "";
      if (text) tab.dataset.alert = "true";
      else delete tab.dataset.alert;
    };
    const panel = el("div", "tab-panel cell-panel", pane.element);
    panel.id = `${this.prefix}-panel-${pane.id}`;
    panel.dataset.pane = pane.id;
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", tab.id);
    this.bar.append(tab);
    this.panels.append(panel);
    this.tabs.set(pane.id, tab);
    this.panelOf.set(pane.id, panel);
  }

  private setCollapsed(collapsed: boolean): void {
    this.collapsed = collapsed;
    this.panels.hidden = collapsed;
    this.element.dataset.collapsed = String(collapsed);
    this.toggle.textContent = collapsed ? t("Show") : t("Hide");
    this.toggle.setAttribute("aria-expanded", String(!collapsed));
  }

  /** The panes name a few of their parts by id (the playground's page has one of each): here
   *  each is the cell's own. */
  private scopeIds(): void {
    for (const node of this.panels.querySelectorAll<HTMLElement>("[id]")) {
      if (!node.id.startsWith(`${this.prefix}-`)) node.id = `${this.prefix}-${node.id}`;
    }
  }

  /** The ARIA tabs pattern: the arrows move along the bar, Home and End go to its ends. */
  private onKey(e: KeyboardEvent): void {
    const ids = [...this.tabs.keys()].filter((id) => !this.tabs.get(id)!.hidden);
    const i = Math.max(0, ids.indexOf(this.selected));
    const step: Record<string, number> = { ArrowRight: 1, ArrowLeft: ids.length - 1, Home: -i, End: ids.length - 1 - i };
    if (!(e.key in step) || e.altKey || e.ctrlKey || e.metaKey) return;
    const next = ids[(i + step[e.key] + ids.length) % ids.length];
    this.select(next);
    this.tabs.get(next)!.focus();
    e.preventDefault();
    e.stopPropagation();
  }
}
