// The "Compiled" tab: every function the run compiled, with its jaxpr, StableHLO and optimised
// HLO in a read-only editor, what compiling cost, why it compiled again; a diff of any two
// texts; and the helper's side-by-side jaxprs (f, grad(f), vmap(f)) as an entry of their own.
//
// Texts whose lines map to the snippet (jaxpr_lines, hlo_lines) are linked to the editor, as in
// Compiler Explorer: pointing at a compiled line marks the snippet line it came from, and the
// editor's cursor line marks the compiled lines it produced.
import type { CompiledEvent, DisplayEvent, LineMap, RunEvent } from "../events";
import { el, strokeIcon } from "../dom";
import { bytes, count, duration, flops as formatFlops, num, str } from "../format";
import { partsText } from "../explanations";
import { formatNumber, t, tn } from "../i18n";
import { asName, sentence, type Pane } from "./pane";
import { colorize, DiffViewer, TextViewer, type Language } from "./viewers";

/** A compilation the node had compiled for an earlier run, loaded rather than compiled. */
const CACHED_TITLE = t("Loaded from this node's compile cache: an earlier run compiled exactly this module, and the time shown is the load. Run with {options} to compile afresh.", { options: '{"options": {"compile_cache": false}}' });

type TextKind = "jaxpr" | "stablehlo" | "hlo";

const KINDS: { kind: TextKind; label: string; language: Language }[] = [
  { kind: "jaxpr", label: "jaxpr", language: "jaxpr" },
  { kind: "stablehlo", label: "StableHLO", language: "hlo" },
  { kind: "hlo", label: "HLO", language: "hlo" },
];

const TRUNCATED = /\[truncated[^\]\n]*\]\s*$/;

interface FunctionEntry {
  type: "function";
  id: number;
  /** The function's name, with " #2" when an earlier entry has the same name. */
  label: string;
  event: CompiledEvent;
}

interface Panel {
  title: string;
  jaxpr: string | null;
  error: string | null;
}

interface JaxprsEntry {
  type: "jaxprs";
  id: number;
  label: string;
  panels: Panel[];
}

type Entry = FunctionEntry | JaxprsEntry;

/** Something the diff can show: a compiled function or one jaxpr of a side-by-side display. */
interface DiffSource {
  key: string;
  label: string;
  texts: Partial<Record<TextKind, string>>;
}

/** What the pane asks of the code editor. */
export interface SourceLink {
  /** Mark snippet line `line` (null: none); `reveal` scrolls it into view. */
  highlight(line: number | null, reveal: boolean): void;
  /** Put the cursor on a snippet line. */
  goTo(line: number): void;
}

export class CompiledPane implements Pane {
  readonly id = "compiled";
  readonly title = t("Compiled");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  readonly showsZero = true;

  private entries: Entry[] = [];
  private selected: Entry | null = null;
  private kind: TextKind = "jaxpr";
  private diffing = false;
  private diffLeft = "";
  private diffRight = "";
  private diffKind: TextKind = "jaxpr";
  private finished = false;
  private sourceLine: number | null = null;

  private readonly placeholder: HTMLElement;
  /** What XLA is compiling right now, when it takes a while (a "compiling" event). */
  private readonly pending: HTMLElement;
  private readonly list: HTMLElement;
  private readonly detail: HTMLElement;
  private readonly toolbar: HTMLElement;
  private readonly stats: HTMLElement;
  private readonly codeView: HTMLElement;
  private readonly viewHost: HTMLElement;
  private readonly viewNote: HTMLElement;
  private readonly jaxprsGrid: HTMLElement;
  private readonly diffHost: HTMLElement;
  private readonly viewer: TextViewer;
  private readonly diff: DiffViewer;

  constructor(private readonly source: SourceLink) {
    this.element = el("div", "compiled");
    this.placeholder = el("div", "pane-placeholder");
    this.pending = el("div", "compiled-pending");
    this.pending.setAttribute("role", "status");
    this.pending.hidden = true;
    this.list = el("div", "compiled-list");
    this.list.setAttribute("role", "listbox");
    this.list.setAttribute("aria-label", t("Compiled functions"));
    this.list.addEventListener("keydown", (e) => this.onListKey(e));

    this.toolbar = el("div", "compiled-toolbar");
    this.stats = el("div", "compiled-stats");
    this.viewNote = el("p", "code-view-note");
    this.viewHost = el("div", "code-view-host");
    this.codeView = el("div", "code-view", this.viewHost, this.viewNote);
    this.jaxprsGrid = el("div", "jaxprs-grid");
    this.diffHost = el("div", "code-view-host diff-host");
    this.viewer = new TextViewer(this.viewHost);
    this.viewer.onSourceLine = (line, reveal) => source.highlight(line, reveal);
    this.diff = new DiffViewer(this.diffHost);
    this.detail = el("div", "compiled-detail", this.toolbar, this.stats, this.codeView, this.jaxprsGrid, this.diffHost);

    this.element.append(this.pending, this.placeholder, this.list, this.detail);
    this.reset();
  }

  reset(): void {
    this.showPending(null);
    this.entries = [];
    this.selected = null;
    this.diffing = false;
    this.finished = false;
    this.viewer.clear();
    this.diff.clear();
    this.list.replaceChildren();
    this.jaxprsGrid.replaceChildren();
    delete this.jaxprsGrid.dataset.entry;
    this.source.highlight(null, false);
    this.render();
    this.onChange?.(null);
  }

  idle(): void {
    this.reset();
  }

  handle(event: RunEvent): void {
    if (event.type === "compiling") {
      this.showPending(event.done ? null : (str(event.signature) ?? str(event.name) ?? t("a function")));
    } else if (event.type === "compiled") {
      this.showPending(null);
      this.add({ type: "function", id: this.entries.length, label: "", event });
    } else if (event.type === "display" && event.kind === "jaxprs") {
      const panels = jaxprPanels(event);
      if (panels.length === 0) return;
      this.add({
        type: "jaxprs",
        id: this.entries.length,
        label: panels.map((p) => p.title).join(" · "),
        panels,
      });
    } else if (event.type === "finished") {
      this.showPending(null);
      this.finished = true;
      if (this.entries.length === 0) {
        this.render();
        // "0" on the tab: that nothing compiled is said, not left to a missing badge.
        this.onChange?.(0);
      }
    }
  }

  private showPending(what: string | null): void {
    this.pending.hidden = what === null;
    this.pending.replaceChildren();
    if (what !== null) {
      this.pending.append(el("span", "pending-dot"), el("span", null, ...sentence(t("XLA is compiling {function}…"), { function: el("code", null, what) })));
    }
  }

  /** The editor's cursor is on snippet line `line`: mark what it compiled to. */
  showSourceLine(line: number | null): void {
    this.sourceLine = line;
    if (!this.diffing && this.selected?.type === "function") this.viewer.highlightSource(line);
  }

  /** The entries' labels, in order (for tests and the console). */
  names(): string[] {
    return this.entries.map((e) => e.label);
  }

  /** The text the viewer shows now (for tests and the console). */
  shownText(): string {
    return this.viewer.text();
  }

  /** The line of the shown text "Show in Compiled" marked (0: none), for tests. */
  markedLine(): number {
    return this.viewer.markedLine();
  }

  /**
   * Shows the instruction `op` of HLO module `module` (a profile's device op): the function
   * compiled to that module, its optimised HLO, the line that defines `op` marked in the middle
   * and its snippet line marked in the editor. Whether a function of that module is here.
   */
  revealHlo(module: string, op: string): boolean {
    const found = findHlo(this.compiledEvents(), module, op);
    const entry = found && this.entries.find((e) => e.type === "function" && e.event === found.event);
    if (!found || !entry) return false;
    this.diffing = false;
    this.kind = "hlo";
    this.selected = entry;
    this.render();
    if (found.line !== null) {
      this.viewer.markLine(found.line);
      if (found.source !== null) this.source.highlight(found.source, true);
    }
    return true;
  }

  private compiledEvents(): CompiledEvent[] {
    return this.entries.flatMap((e) => (e.type === "function" ? [e.event] : []));
  }

  private add(entry: Entry): void {
    if (entry.type === "function") {
      const name = str(entry.event.name) ?? t("(anonymous)");
      const same = this.entries.filter((e) => e.type === "function" && e.event.name === entry.event.name);
      entry.label = same.length ? `${name} #${same.length + 1}` : name;
    }
    this.entries.push(entry);
    this.list.append(this.row(entry));
    if (!this.selected) this.select(entry, false);
    else this.renderListState();
    // The Compare button needs two entries.
    if (this.entries.length === 2 && !this.diffing) this.render();
    this.onChange?.(this.entries.length);
  }

  private row(entry: Entry): HTMLElement {
    const row = el("button", "compiled-row");
    row.type = "button";
    row.setAttribute("role", "option");
    row.dataset.entry = String(entry.id);
    row.addEventListener("click", () => this.select(entry, true));

    if (entry.type === "jaxprs") {
      const head = el("span", "row-head", asName(el("span", "row-name", entry.label)), el("span", "chip chip-accent", t("side by side")));
      const failed = entry.panels.filter((p) => p.jaxpr === null).length;
      const n = formatNumber(entry.panels.length);
      const sub = failed
        ? t("{n} jaxprs from jaxplay.jaxprs ({failed} not applicable)", { n, failed: formatNumber(failed) })
        : t("{n} jaxprs from jaxplay.jaxprs", { n });
      row.append(head, el("span", "row-sub", sub));
      return row;
    }

    const ev = entry.event;
    const name = str(ev.name) ?? t("(anonymous)");
    const head = el("span", "row-head");
    const title = el("span", "row-title", asName(el("span", "row-name", entry.label)));
    const signature = str(ev.signature);
    if (signature && signature.startsWith(`${name}(`)) {
      title.append(el("span", "row-sig", signature.slice(name.length)));
      title.title = signature;
    }
    head.append(title);
    const via = str(ev.via);
    if (via && via !== "jit") head.append(asName(el("span", "chip", via)));
    const devices = num(ev.num_devices);
    if (devices !== null && devices > 1) head.append(el("span", "chip", tn("{n} device", "{n} devices", devices, { n: formatNumber(devices) })));
    if (ev.cached === true) {
      const chip = el("span", "chip", t("cached"));
      chip.title = CACHED_TITLE;
      head.append(chip);
    }
    const compileMs = num(ev.compile_ms);
    if (compileMs !== null) {
      // A loaded executable's time is its load from the node's compile cache, not XLA's.
      head.append(el("span", ev.cached === true ? "row-time loaded" : "row-time", duration(compileMs)));
    }
    row.append(head);

    const recompile = ev.recompile && typeof ev.recompile === "object" ? ev.recompile : null;
    const metrics: string[] = [];
    const flops = num(ev.flops);
    const accessed = num(ev.bytes_accessed);
    if (flops !== null) metrics.push(formatFlops(flops));
    if (accessed !== null) metrics.push(t("{bytes} accessed", { bytes: bytes(accessed) }));
    if (metrics.length || recompile) {
      const sub = el("span", "row-sub");
      if (recompile) {
        const n = num(recompile.count);
        const chip = el("span", "chip chip-warn", n !== null ? t("recompiled ×{n}", { n: formatNumber(n) }) : t("recompiled"));
        sub.append(chip);
        const reason = str(recompile.reason);
        const reasons = partsText(recompile.reason_parts);
        if (reasons) {
          const joined = reasons.reduce((first, next) => t("{first}; {next}", { first, next }));
          sub.append(el("span", "row-reason", joined));
          chip.title = t("{name} compiled again (compilation {count}) because {reasons}.",
            { name: str(ev.name) ?? "", count: n ?? "", reasons: joined });
        } else {
          if (reason) sub.append(el("span", "row-reason", shortReason(reason)));
          chip.title = reason ?? t("This function was compiled again");
        }
      }
      if (metrics.length) sub.append(el("span", "row-metrics", metrics.join(" · ")));
      row.append(sub);
    }
    const warning = partsText(ev.warning_parts)?.join("") ?? str(ev.warning);
    if (warning) row.append(el("span", "row-warning", warning));
    const failure = str(ev.capture_error);
    if (failure) row.append(el("span", "row-warning", t("Could not capture its code: {error}", { error: failure })));
    return row;
  }

  private select(entry: Entry, byUser: boolean): void {
    this.selected = entry;
    if (byUser) this.diffing = false;
    this.render();
    if (byUser) this.rowOf(entry)?.focus();
  }

  private rowOf(entry: Entry): HTMLElement | null {
    return this.list.querySelector<HTMLElement>(`[data-entry="${entry.id}"]`);
  }

  private onListKey(e: KeyboardEvent): void {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    if (!this.selected) return;
    const i = this.entries.indexOf(this.selected) + (e.key === "ArrowDown" ? 1 : -1);
    const next = this.entries[i];
    if (next) this.select(next, true);
    e.preventDefault();
  }

  private renderListState(): void {
    for (const row of this.list.querySelectorAll<HTMLElement>(".compiled-row")) {
      const on = this.selected !== null && row.dataset.entry === String(this.selected.id);
      row.setAttribute("aria-selected", String(on));
      row.tabIndex = on ? 0 : -1;
    }
  }

  private render(): void {
    const empty = this.entries.length === 0;
    this.placeholder.hidden = !empty;
    this.list.hidden = empty;
    this.detail.hidden = empty;
    if (empty) {
      this.renderPlaceholder();
      return;
    }
    this.renderListState();
    if (this.diffing) this.renderDiff();
    else if (this.selected?.type === "jaxprs") this.renderJaxprs(this.selected);
    else if (this.selected) this.renderFunction(this.selected);
  }

  private renderPlaceholder(): void {
    const code = (text: string) => el("code", null, text);
    this.placeholder.replaceChildren(
      el(
        "p",
        "pane-placeholder-title",
        this.finished ? t("This run compiled nothing") : t("Nothing compiled yet."),
      ),
      ...(this.finished
        ? [el("p", "compiled-none-why", t("This run compiled nothing new: every jitted call it made found its function already compiled for those shapes (earlier in this session, or in the compile cache), and a run that calls no jitted function has nothing to compile."))]
        : []),
      el(
        "p",
        null,
        ...sentence(
          t("Each function the run compiles with XLA shows up here, with its jaxpr, StableHLO and optimised HLO, what compiling it cost, and why it compiled again. Try {jit}, or {jaxprs} for the jaxprs of f, grad(f) and vmap(f) side by side."),
          { jit: code("jax.jit(f)(x)"), jaxprs: code("jaxplay.jaxprs(f, x)") },
        ),
      ),
    );
  }

  // ---- One function ----------------------------------------------------------------------

  private renderFunction(entry: FunctionEntry): void {
    this.showSurface("code");
    const ev = entry.event;
    const available = KINDS.filter((k) => textOf(ev, k.kind) !== null);
    if (!available.some((k) => k.kind === this.kind) && available.length) this.kind = available[0].kind;

    const segments = el("div", "segmented");
    segments.setAttribute("role", "tablist");
    segments.setAttribute("aria-label", t("Representation"));
    for (const k of KINDS) {
      const has = textOf(ev, k.kind) !== null;
      const b = el("button", "segment", k.label);
      b.type = "button";
      b.setAttribute("role", "tab");
      b.dataset.kind = k.kind;
      b.setAttribute("aria-selected", String(k.kind === this.kind));
      b.disabled = !has;
      if (!has) b.title = t("The runner sent no {text} for this function", { text: k.label });
      b.addEventListener("click", () => {
        this.kind = k.kind;
        this.render();
      });
      segments.append(b);
    }
    const linked = (lineMap(ev[`${this.kind}_lines` as const]) ?? []).some((l) => l !== null);
    const hint = linked ? el("span", "toolbar-hint link-hint", t("linked to your code")) : null;
    if (hint) hint.title = t("Point at a line to mark the line of your code it came from; put the editor's cursor on a line to mark what it became.");
    this.toolbar.replaceChildren(segments, hint ?? "", el("span", "spacer"), this.compareButton(entry));

    this.stats.replaceChildren(...functionStats(ev, (line) => this.source.goTo(line)));
    this.stats.hidden = this.stats.childElementCount === 0;

    const text = textOf(ev, this.kind);
    const language = KINDS.find((k) => k.kind === this.kind)!.language;
    if (text === null) {
      this.viewHost.hidden = true;
      this.showNote(t("The runner sent no compiled text for this function."));
      return;
    }
    this.viewHost.hidden = false;
    const marker = TRUNCATED.exec(text.slice(-200));
    const cut = Array.isArray(ev.truncated) && ev.truncated.includes(this.kind);
    this.showNote(marker ? cutNote(marker[0]) : cut ? t("Cut to fit: the rest of this text is not shown.") : null);
    this.viewer.show(`${entry.id}:${this.kind}`, text, language, lineMap(ev[`${this.kind}_lines` as const]));
    this.viewer.highlightSource(this.sourceLine);
  }

  private showNote(text: string | null): void {
    this.viewNote.hidden = text === null;
    this.viewNote.textContent = text ?? "";
  }

  private compareButton(entry: Entry): HTMLButtonElement {
    const sources = this.sources();
    const icon = strokeIcon("M5.5 2v9M3 8.5l2.5 2.5L8 8.5M10.5 14V5M8 7.5l2.5-2.5L13 7.5"); // arrows both ways
    const b = el("button", "button button-small compare-button", icon, el("span", null, t("Compare")));
    b.type = "button";
    b.title = t("Show the difference between two entries");
    b.disabled = sources.length < 2;
    if (b.disabled) b.title = t("Compare needs two entries (or a side-by-side display)");
    b.addEventListener("click", () => this.openDiff(entry));
    return b;
  }

  // ---- Side-by-side jaxprs ---------------------------------------------------------------

  private renderJaxprs(entry: JaxprsEntry): void {
    this.showSurface("jaxprs");
    this.stats.hidden = true;
    const hint = el("span", "toolbar-hint", t("The same function, traced and transformed"));
    this.toolbar.replaceChildren(hint, el("span", "spacer"), this.compareButton(entry));
    // Rebuilt only when another entry is chosen: highlighting is the costly part.
    if (this.jaxprsGrid.dataset.entry === String(entry.id)) return;
    this.jaxprsGrid.dataset.entry = String(entry.id);
    const columns = entry.panels.map((panel) => {
      const body = el("pre", panel.jaxpr === null ? "jaxpr-block jaxpr-error" : "jaxpr-block");
      if (panel.jaxpr === null) {
        body.textContent = `${t("Does not apply here.")}\n${panel.error ?? ""}`.trim();
      } else {
        const text = panel.jaxpr;
        body.textContent = text;
        void colorize(text, "jaxpr").then((html) => {
          // Monaco escapes the text; the block may have been replaced meanwhile.
          if (body.isConnected && body.textContent === text) body.innerHTML = html;
        });
      }
      return el("section", "jaxprs-column", asName(el("h2", "jaxprs-label", panel.title)), body);
    });
    this.jaxprsGrid.replaceChildren(...columns);
  }

  // ---- Diff ------------------------------------------------------------------------------

  private sources(): DiffSource[] {
    const out: DiffSource[] = [];
    for (const entry of this.entries) {
      if (entry.type === "function") {
        const texts: DiffSource["texts"] = {};
        for (const k of KINDS) {
          const text = textOf(entry.event, k.kind);
          if (text !== null) texts[k.kind] = text;
        }
        const signature = str(entry.event.signature);
        out.push({ key: `f${entry.id}`, label: signature && entry.label === entry.event.name ? signature : entry.label, texts });
      } else {
        entry.panels.forEach((panel, i) => {
          if (panel.jaxpr !== null) {
            out.push({ key: `j${entry.id}.${i}`, label: t("{title} (side by side)", { title: panel.title }), texts: { jaxpr: panel.jaxpr } });
          }
        });
      }
    }
    return out;
  }

  private openDiff(from: Entry): void {
    const sources = this.sources();
    if (sources.length < 2) return;
    const own = sources.filter((s) => s.key === `f${from.id}` || s.key.startsWith(`j${from.id}.`));
    const first = own[0]?.key ?? sources[0].key;
    const second = own[1]?.key ?? sources.find((s) => s.key !== first && s.key.startsWith("f"))?.key ?? sources.find((s) => s.key !== first)!.key;
    this.diffLeft = first;
    this.diffRight = second;
    this.diffKind = from.type === "function" ? this.kind : "jaxpr";
    this.diffing = true;
    this.render();
  }

  private renderDiff(): void {
    this.showSurface("diff");
    this.stats.hidden = true;
    const sources = this.sources();
    const pick = (value: string, label: string, onPick: (key: string) => void) => {
      const select = el("select", "select-small");
      select.setAttribute("aria-label", label);
      for (const s of sources) {
        const option = el("option", null, s.label);
        option.value = s.key;
        option.selected = s.key === value;
        select.append(option);
      }
      select.addEventListener("change", () => {
        onPick(select.value);
        this.render();
      });
      return select;
    };
    const left = pick(this.diffLeft, t("Left side"), (k) => (this.diffLeft = k));
    const right = pick(this.diffRight, t("Right side"), (k) => (this.diffRight = k));
    const kind = el("select", "select-small");
    kind.setAttribute("aria-label", t("Text to compare"));
    for (const k of KINDS) {
      const option = el("option", null, k.label);
      option.value = k.kind;
      option.selected = k.kind === this.diffKind;
      kind.append(option);
    }
    kind.addEventListener("change", () => {
      this.diffKind = kind.value as TextKind;
      this.render();
    });
    const close = el("button", "button button-small", t("Done"));
    close.type = "button";
    close.title = t("Back to the selected entry");
    close.addEventListener("click", () => {
      this.diffing = false;
      this.render();
    });
    this.toolbar.replaceChildren(
      el("span", "diff-picks", left, el("span", "diff-vs", t("vs")), right, kind),
      el("span", "spacer"),
      close,
    );

    const a = sources.find((s) => s.key === this.diffLeft);
    const b = sources.find((s) => s.key === this.diffRight);
    const language = KINDS.find((k) => k.kind === this.diffKind)!.language;
    const missing = [a, b].filter((s) => !s || s.texts[this.diffKind] === undefined);
    const label = KINDS.find((k) => k.kind === this.diffKind)!.label;
    this.showNote(
      missing.length
        ? t("No {text} for {entries}: shown as empty.", { text: label, entries: missing.map((s) => s?.label ?? "?").join(t(" or ")) })
        : null,
    );
    this.diff.show(a?.texts[this.diffKind] ?? "", b?.texts[this.diffKind] ?? "", language);
  }

  /** Which of the three surfaces (code viewer, jaxprs grid, diff) the detail area shows. */
  private showSurface(surface: "code" | "jaxprs" | "diff"): void {
    this.codeView.hidden = surface === "jaxprs";
    this.viewHost.hidden = surface !== "code";
    this.viewNote.hidden = true;
    this.jaxprsGrid.hidden = surface !== "jaxprs";
    this.diffHost.hidden = surface !== "diff";
    this.detail.dataset.surface = surface;
    if (surface !== "code") this.source.highlight(null, false);
  }
}

/** The HLO module a compilation made: its `module`, else the name its HLO text starts with. */
export function hloModuleOf(ev: CompiledEvent): string | null {
  const named = str(ev.module);
  if (named) return named;
  const m = /^HloModule\s+([^\s,]+)/.exec(str(ev.hlo) ?? "");
  return m ? m[1] : null;
}

/** The 1-based line of HLO text `hlo` that defines instruction `op` (`%op = ...`), or null. */
export function hloLineOf(hlo: string, op: string): number | null {
  const escaped = op.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(`^\\s*(?:ROOT\\s+)?%?${escaped}\\s*=\\s`);
  const lines = hlo.split("\n");
  for (let i = 0; i < lines.length; i++) if (pattern.test(lines[i])) return i + 1;
  return null;
}

/** A module's name as two producers may spell it: without a trailing ".3" or "(3)". */
function bareModule(name: string): string {
  return name.replace(/(\.\d+|\(\d+\))$/, "");
}

/**
 * Where instruction `op` of HLO module `module` is among a run's compilations: the compilation,
 * the line of its optimised HLO that defines `op` (null when not found) and that line's snippet
 * line (null when none). Of several compilations of one module, the first that defines `op`.
 */
export function findHlo(
  events: readonly CompiledEvent[],
  module: string,
  op: string,
): { event: CompiledEvent; line: number | null; source: number | null } | null {
  const same = (name: string | null) => name !== null && (name === module || bareModule(name) === bareModule(module));
  const candidates = events.filter((ev) => {
    const firstLine = /^HloModule\s+([^\s,]+)/.exec(str(ev.hlo) ?? "");
    return same(hloModuleOf(ev)) || same(firstLine ? firstLine[1] : null);
  });
  if (!candidates.length) return null;
  for (const event of candidates) {
    const text = str(event.hlo);
    const line = text ? hloLineOf(text, op) : null;
    if (line === null) continue;
    const map = lineMap(event.hlo_lines);
    return { event, line, source: map?.[line - 1] ?? null };
  }
  return { event: candidates[0], line: null, source: null };
}

/** What the runner's cut marker ("[truncated: 1.2 MB total]") says, in the page's words. */
function cutNote(marker: string): string {
  const total = /^\[truncated: (.+) total\]$/.exec(marker.trim())?.[1];
  if (total) return t("Cut to fit: truncated: {total} total. The rest is not shown.", { total });
  return t("Cut to fit: {marker}. The rest is not shown.", { marker: marker.trim().replace(/^\[|\]$/g, "") });
}

function textOf(ev: CompiledEvent, kind: TextKind): string | null {
  return str(ev[kind]);
}

function lineMap(value: unknown): LineMap | null {
  if (!Array.isArray(value)) return null;
  return value.map((v) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : null));
}

/** How executor/runner/recompile.py's reasons begin, names of the snippet's never among them. */
const REASON_OPENINGS =
  /^(?:argument |its arguments' |static argument |an argument |the donated |the same function |a JAX setting |it is a new )/;

/** "f compiled again (compilation 2) because argument x has a new shape: ..." → "Argument x has a
 *  new shape: ...". Only the runner's own first words take a capital: a reason that opens with
 *  one of the snippet's names (as runs saved before said it: "x has a new shape") keeps it as
 *  written, since `X` would be another name. */
function shortReason(reason: string): string {
  const m = /^.*? compiled again(?: \([^)]*\))? because (.+)$/s.exec(reason);
  if (!m) return reason;
  const rest = m[1].replace(/\.$/, "");
  return REASON_OPENINGS.test(rest) ? rest.charAt(0).toUpperCase() + rest.slice(1) : rest;
}

/** The panels of a side-by-side display: {title, jaxpr, error}. */
function jaxprPanels(event: DisplayEvent): Panel[] {
  const raw = Array.isArray(event.panels) ? event.panels : [];
  return raw
    .filter((p) => !!p && typeof p === "object")
    .map((p, n) => ({
      title: str(p.title) ?? `#${n + 1}`,
      jaxpr: typeof p.jaxpr === "string" ? p.jaxpr : null,
      error: str(p.error),
    }))
    .filter((p) => p.jaxpr !== null || p.error !== null);
}

/** A library's file as its import path shows it: "optax/_src/alias.py", not the venv's path. */
function packagePath(file: string): string {
  const marker = "site-packages/";
  const at = file.lastIndexOf(marker);
  return at >= 0 ? file.slice(at + marker.length) : file.split("/").slice(-3).join("/");
}

/** The cost of a compilation, as small labelled figures, and where it came from. */
function functionStats(ev: CompiledEvent, goTo: (line: number) => void): HTMLElement[] {
  const out: HTMLElement[] = [];
  const stat = (label: string, value: string, title?: string) => {
    const s = el("span", "stat", el("span", "stat-label", label), el("span", "stat-value", value));
    if (title) s.title = title;
    out.push(s);
  };
  const lineLink = (label: string, value: unknown) => {
    const line = num(value);
    if (line === null) return;
    const b = el("button", "stat stat-link", el("span", "stat-label", label), el("span", "stat-value", t("line {line}", { line })));
    b.type = "button";
    b.title = t("Show this line in the editor");
    b.addEventListener("click", () => goTo(line));
    out.push(b);
  };
  const group = () => {
    if (out.length && !out[out.length - 1].classList.contains("stat-sep")) out.push(el("span", "stat-sep"));
  };
  lineLink(ev.origin === "jax" ? t("jitted") : t("defined"), ev.line);
  lineLink(t("called"), ev.call_line);
  if ((ev.origin === "jax" || ev.origin === "library") && typeof ev.file === "string" && ev.file) {
    stat(t("from"), packagePath(ev.file), ev.file);
  }
  group();
  const times: [string, unknown, string][] = [
    [t("trace"), ev.trace_ms, t("Python tracing to a jaxpr")],
    [t("lower"), ev.lower_ms, t("jaxpr to StableHLO")],
    ev.cached === true ? [t("load"), ev.compile_ms, CACHED_TITLE] : [t("compile"), ev.compile_ms, t("XLA compilation to machine code")],
  ];
  for (const [label, value, title] of times) {
    const ms = num(value);
    if (ms !== null) stat(label, duration(ms), title);
  }
  group();
  const flops = num(ev.flops);
  if (flops !== null) stat("FLOPs", count(flops), t("Floating-point operations per call (XLA cost analysis)"));
  const accessed = num(ev.bytes_accessed);
  if (accessed !== null) stat(t("bytes"), bytes(accessed), t("Bytes read and written per call (XLA cost analysis)"));
  group();
  const memory = ev.memory && typeof ev.memory === "object" ? ev.memory : null;
  if (memory) {
    const names: Record<string, [string, string]> = {
      argument_bytes: [t("args"), t("Memory for the arguments")],
      output_bytes: [t("out"), t("Memory for the results")],
      temp_bytes: [t("temp"), t("Scratch memory XLA needs while it runs")],
      alias_bytes: [t("aliased"), t("Output memory shared with donated arguments")],
      peak_bytes: [t("peak"), t("Peak memory of one call")],
    };
    for (const [key, [label, title]] of Object.entries(names)) {
      const n = num(memory[key]);
      // Aliased memory matters only when there is some (donated arguments).
      if (n === null || (key === "alias_bytes" && n === 0)) continue;
      stat(label, bytes(n), t("{title} (memory_analysis: {key})", { title, key }));
    }
  }
  while (out.length && out[out.length - 1].classList.contains("stat-sep")) out.pop();
  return out;
}

