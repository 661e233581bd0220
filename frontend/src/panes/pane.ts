// A result view in the right-hand panel. Each pane gets every event of the run it shows, in
// order, and renders the ones it cares about. To add a view (compiled code, timings, figures):
// write a class implementing Pane and add it to the list in workbench.ts.
import type { RunEvent } from "../events";
import { formatNumber, t } from "../i18n";

export interface Pane {
  /** Stable id: the tab is #tab-<id>, the panel #panel-<id>. */
  readonly id: string;
  readonly title: string;
  /** The panel's content; the tab bar owns the wrapper around it. */
  readonly element: HTMLElement;
  /** A new run is about to be shown: forget the previous one. */
  reset(): void;
  handle(event: RunEvent): void;
  /** No run to show any more. */
  idle?(): void;
  /** Its tab was just selected: its panel is in view. */
  shown?(): void;
  /** Called whenever the pane's content changes; a tab shows a count when it returns one. */
  onChange?: (count: number | null) => void;
  /** Called when the pane holds something that must not be missed (the run's error), or no
   *  longer does (null): its tab is marked whichever tab is open. */
  onAlert?: (alert: string | null) => void;
  /** Whether its tab is there at first (default true); a pane that is there only at times
   *  (Timeline: for a profiled run) says so through onPresent. */
  readonly initiallyPresent?: boolean;
  onPresent?: (present: boolean) => void;
  /** Whether a count of 0 is news worth its badge ("0" on Compiled: a run that compiled nothing,
   *  its calls served from the cache); otherwise 0 shows no badge. */
  readonly showsZero?: boolean;
}

/**
 * The tab bar. A tab whose pane gets new content while another tab is shown is marked (its
 * count turns to the accent colour) but never takes the focus: a run's output stays in view
 * while it streams.
 */
export class Tabs {
  private readonly tabs = new Map<string, HTMLButtonElement>();
  private readonly panels = new Map<string, HTMLElement>();
  private readonly counts = new Map<string, number>();
  private active: string | null = null;

  constructor(
    private readonly bar: HTMLElement,
    private readonly container: HTMLElement,
    readonly panes: readonly Pane[],
  ) {
    for (const pane of panes) this.add(pane);
    if (panes.length > 0) this.select(panes[0].id);
    bar.addEventListener("keydown", (e) => this.onKey(e));
    this.markOverflow();
  }

  /** A bar wider than its room (a phone's, once a profiled run adds Timeline) scrolls sideways
   *  with no scroll bar drawn: its edges fade where tabs are out of view, so that they are seen
   *  to be there (``data-more``: "start", "end", "both" or "none"). */
  private markOverflow(): void {
    const bar = this.bar;
    const mark = () => {
      const start = bar.scrollLeft > 1;
      const end = bar.scrollLeft + bar.clientWidth < bar.scrollWidth - 1;
      bar.dataset.more = start && end ? "both" : start ? "start" : end ? "end" : "none";
    };
    bar.addEventListener("scroll", mark, { passive: true });
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(mark).observe(bar);
    // A tab shown or hidden (Timeline, after a profiled run) changes what fits.
    new MutationObserver(mark).observe(bar, { subtree: true, attributes: true, attributeFilter: ["hidden"] });
    mark();
  }

  select(id: string): void {
    if (!this.tabs.has(id) || this.tabs.get(id)!.hidden) return;
    this.active = id;
    for (const [paneId, tab] of this.tabs) {
      const selected = paneId === id;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      if (selected) delete tab.dataset.news;
      this.panels.get(paneId)!.hidden = !selected;
    }
    this.panes.find((p) => p.id === id)?.shown?.();
  }

  get selected(): string | null {
    return this.active;
  }

  /** Each pane's count of items, as its tab shows it. */
  summary(): { id: string; title: string; count: number }[] {
    return this.panes.map((p) => ({ id: p.id, title: p.title, count: this.counts.get(p.id) ?? 0 }));
  }

  reset(): void {
    for (const pane of this.panes) {
      pane.reset();
      pane.onChange?.(null);
      pane.onAlert?.(null);
    }
  }

  handle(event: RunEvent): void {
    for (const pane of this.panes) pane.handle(event);
  }

  idle(): void {
    for (const pane of this.panes) {
      pane.idle?.();
      pane.onChange?.(null);
      pane.onAlert?.(null);
    }
  }

  private add(pane: Pane): void {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.className = "tab";
    tab.id = `tab-${pane.id}`;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", `panel-${pane.id}`);
    const label = document.createElement("span");
    label.textContent = pane.title;
    const count = document.createElement("span");
    count.className = "tab-count";
    count.hidden = true;
    tab.append(label, count);
    tab.addEventListener("click", () => this.select(pane.id));
    tab.hidden = pane.initiallyPresent === false;
    pane.onPresent = (present) => {
      if (tab.hidden === !present) return;
      tab.hidden = !present;
      if (!present && this.active === pane.id) this.select(this.panes[0].id);
    };
    pane.onChange = (n) => {
      const before = this.counts.get(pane.id) ?? 0;
      this.counts.set(pane.id, n ?? 0);
      count.hidden = n === null || (n === 0 && !pane.showsZero);
      count.textContent = n === null ? "" : formatNumber(n);
      if (!n) delete tab.dataset.news;
      else if (n > before && this.active !== pane.id) tab.dataset.news = "true";
    };

    const alert = document.createElement("span");
    alert.className = "tab-alert visually-hidden";
    alert.hidden = true;
    tab.append(alert);
    pane.onAlert = (text) => {
      alert.hidden = text === null;
      alert.textContent = text ? t(" ({alert})", { alert: text }) : "";
      if (text) tab.dataset.alert = "true";
      else delete tab.dataset.alert;
    };

    const panel = document.createElement("div");
    panel.className = "tab-panel";
    panel.id = `panel-${pane.id}`;
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", tab.id);
    panel.append(pane.element);

    this.bar.append(tab);
    this.container.append(panel);
    this.tabs.set(pane.id, tab);
    this.panels.set(pane.id, panel);
  }

  /** The ARIA tabs pattern: arrows move along the bar (wrapping), Home and End go to its ends;
   *  a tab is selected as it takes the focus. */
  private onKey(e: KeyboardEvent): void {
    const ids = [...this.tabs.keys()].filter((id) => !this.tabs.get(id)!.hidden);
    const i = ids.indexOf(this.active ?? ids[0]);
    const step: Record<string, number> = { ArrowRight: 1, ArrowLeft: ids.length - 1, Home: -i, End: ids.length - 1 - i };
    if (!(e.key in step) || e.altKey || e.ctrlKey || e.metaKey) return;
    const next = ids[(i + step[e.key] + ids.length) % ids.length];
    this.select(next);
    this.tabs.get(next)!.focus();
    e.preventDefault();
  }
}

/** Marks a name from the code or the trace (a function's, an op's): a name, not words to
 *  translate, whatever the page's language. */
export function asName<T extends HTMLElement>(node: T): T {
  node.translate = false;
  return node;
}

/** A translated sentence with elements (a link, a code) where its `{name}`s are: the words go
 *  round them in the order the language puts them. */
export function sentence(text: string, nodes: Record<string, Node>): (Node | string)[] {
  const out: (Node | string)[] = [];
  for (const part of text.split(/(\{\w+\})/)) {
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    if (name !== undefined && Object.prototype.hasOwnProperty.call(nodes, name)) out.push(nodes[name]);
    else if (part) out.push(part);
  }
  return out;
}
