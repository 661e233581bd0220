// One cell of the notebook: its editor (code, or Markdown shown rendered until it is edited),
// the gutter with its Run button and its number in the session, its tools (move, convert,
// delete), the notice a run of it may need, and a code cell's results with their own run
// (run.ts RunSession: its events, its status line, Cancel, its run picked up after a reload).
import type { CreatedRun } from "../api";
import { el, strokeIcon } from "../dom";
import { type CodeEditor, type EditorTheme } from "../editor";
import type { RunEvent } from "../events";
import { explanationText } from "../explanations";
import { t } from "../i18n";
import { setAnalysisContext, setRunShapes } from "../intellisense";
import { RunSession, type RunPhase, type RunView } from "../run";
import { monaco } from "../monaco";
import { createCellEditor } from "./editors";
import { renderMarkdown } from "./markdown";
import { LIST_SEPARATOR, staleText, type CellError, type CellOutput, type CellType, type LocalCell, type Staleness } from "./model";
import { CellResults } from "./results";

export interface CellHost {
  workerUrl: string;
  theme(): EditorTheme;
  fontSize(): number;
  setFontSize(size: number): void;
  readOnly: boolean;
  /** The browser's session key of this cell's run (picked up again after a reload). */
  runKey(cell: Cell): string;
  format(code: string): Promise<string>;
  edited(cell: Cell): void;
  focused(cell: Cell): void;
  leave(cell: Cell): void;
  run(cell: Cell, then: "stay" | "advance" | "insert"): void;
  cancel(cell: Cell): void;
  move(cell: Cell, by: -1 | 1): void;
  remove(cell: Cell): void;
  convert(cell: Cell, type: CellType): void;
  /** The cell's run started, ended, or was shown again (a reload). */
  phase(cell: Cell, phase: RunPhase): void;
  /** The code cells above this one, in order: what its completion and hover know of. */
  codeAbove(cell: Cell): string;
  /** An event of the cell's run (its number in the session, how it ended). */
  event(cell: Cell, event: RunEvent): void;
}

const ICONS = {
  run: "M5 3.2v9.6L12.5 8z",
  stop: "M4.5 4.5h7v7h-7z",
  up: "M8 12.5v-9M4.5 7 8 3.5 11.5 7",
  down: "M8 3.5v9M4.5 9 8 12.5 11.5 9",
  remove: "M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.6 8.5h5.8l.6-8.5",
  markdown: "M2 4.5h12v7H2zM4.5 9.5v-3L6 8l1.5-1.5v3M10.5 6.5v3M9.3 8.4l1.2 1.2 1.2-1.2",
  code: "M6 4.5 2.5 8 6 11.5M10 4.5 13.5 8 10 11.5",
};

/** The run button's icons are filled, the tools' drawn. */
function icon(d: string): SVGSVGElement {
  const svg = strokeIcon(d);
  if (d === ICONS.run || d === ICONS.stop) svg.classList.remove("icon-stroke");
  return svg;
}

type Parts = (Node | string)[];

/** A translated sentence whose `{placeholders}` are filled with nodes, in the order the
 *  language puts them. */
export function compose(text: string, parts: Record<string, Parts>): Parts {
  const out: Parts = [];
  let at = 0;
  for (const match of text.matchAll(/\{(\w+)\}/g)) {
    const part = parts[match[1]];
    if (!part) continue;
    out.push(text.slice(at, match.index), ...part);
    at = match.index + match[0].length;
  }
  out.push(text.slice(at));
  return out.filter((part) => part !== "");
}

/** Names in the code, listed: each in a <code> of its own. */
export function codeNames(names: readonly string[]): Parts {
  return names.flatMap((name, i) => (i ? [LIST_SEPARATOR, el("code", null, name)] : [el("code", null, name)]));
}

/** Why a cell is stale, its names as code. */
export function staleParts(stale: NonNullable<Staleness>): Parts {
  return compose(staleText(stale, "{names}"), { names: codeNames("names" in stale ? stale.names : []) });
}

function iconButton(className: string, d: string, label: string): HTMLButtonElement {
  const button = el("button", `button button-icon button-quiet ${className}`, icon(d));
  button.type = "button";
  button.setAttribute("aria-label", label);
  button.title = label;
  return button;
}

export class Cell {
  readonly element: HTMLElement;
  readonly data: LocalCell;
  private editorHost: HTMLElement;
  private code: CodeEditor | null = null;
  private readonly rendered: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly staleLine: HTMLElement;
  private readonly count: HTMLElement;
  private readonly runButton: HTMLButtonElement;
  private readonly typeButton: HTMLButtonElement;
  private readonly heading: HTMLElement;
  readonly results: CellResults;
  readonly session: RunSession;
  private editing = false;
  private shownSource: string | null = null;
  private runPhase: RunPhase = "idle";
  /** Its place in the list (1-based). */
  private index = 1;
  /** What the cell's shown run printed and raised, for an export of the notebook. */
  private streams: CellOutput[] = [];
  private error: CellError | null = null;

  constructor(data: LocalCell, private readonly host: CellHost) {
    this.data = data;
    this.element = el("div", "cell");
    this.element.dataset.cell = data.id;
    this.element.setAttribute("role", "group");
    this.element.tabIndex = -1;

    this.runButton = iconButton("cell-run", ICONS.run, t("Run cell"));
    this.runButton.addEventListener("click", () => {
      if (this.runPhase === "idle") host.run(this, "stay");
      else host.cancel(this);
    });
    this.count = el("span", "cell-count");
    this.count.setAttribute("aria-hidden", "true");
    const gutter = el("div", "cell-gutter", this.runButton, this.count);

    this.heading = el("h2", "visually-hidden");
    const up = iconButton("cell-up", ICONS.up, t("Move cell up"));
    up.addEventListener("click", () => host.move(this, -1));
    const down = iconButton("cell-down", ICONS.down, t("Move cell down"));
    down.addEventListener("click", () => host.move(this, 1));
    this.typeButton = iconButton("cell-type", ICONS.markdown, "");
    this.typeButton.addEventListener("click", () => host.convert(this, this.data.type === "code" ? "markdown" : "code"));
    const remove = iconButton("cell-remove", ICONS.remove, t("Delete cell"));
    remove.addEventListener("click", () => host.remove(this));
    const tools = el("div", "cell-tools", up, down, this.typeButton, remove);
    if (host.readOnly) tools.hidden = true;

    this.staleLine = el("p", "cell-stale");
    this.staleLine.hidden = true;
    this.editorHost = el("div", "cell-editor");
    this.rendered = el("div", "cell-markdown markdown");
    this.rendered.hidden = true;
    this.rendered.addEventListener("dblclick", () => this.edit());
    this.notice = el("div", "cell-notice");
    this.notice.setAttribute("role", "alert");
    this.notice.hidden = true;

    const prefix = `cell-${data.id}`;
    this.results = new CellResults(prefix, {
      revealLine: (line) => this.revealLine(line),
      linkLine: (line, reveal) => this.code?.linkLine(line, reveal),
    }, t("Cell"));

    const main = el("div", "cell-main", this.heading, tools, this.staleLine, this.editorHost, this.rendered, this.notice, this.results.element);
    this.element.append(gutter, main);
    this.element.addEventListener("focusin", () => host.focused(this));
    this.element.addEventListener("mousedown", () => host.focused(this));

    const marks: RunView = {
      reset: () => this.code?.clearMarks(),
      idle: () => this.code?.clearMarks(),
      handle: (event) => {
        if (event.type === "error" && typeof event.line === "number") {
          const said = explanationText(event as unknown as Record<string, unknown>);
          const explanation = said ? `\n\n${said}` : "";
          this.code?.markError(event.line, `${event.exc_type}: ${event.message}${explanation}`);
        }
      },
    };
    // Hovering a name shows what it held when the cell's run ended, for the code that ran.
    let ranCode = data.source;
    const shapes: RunView = {
      reset: () => {
        ranCode = this.source;
        const model = this.code?.editor.getModel();
        if (model) setRunShapes(model, ranCode, null);
      },
      handle: (event) => {
        const model = this.code?.editor.getModel();
        if (model && event.type === "shapes" && event.names && typeof event.names === "object") setRunShapes(model, ranCode, event.names);
      },
    };
    const kept: RunView = {
      reset: () => {
        this.streams = [];
        this.error = null;
      },
      handle: (event) => this.keep(event),
    };
    const told: RunView = { reset: () => {}, handle: (event) => host.event(this, event) };
    this.session = new RunSession(
      [this.results, marks, shapes, kept, told],
      this.results.status,
      (phase) => this.showPhase(phase),
      host.runKey(this),
    );
    this.render();
  }

  get id(): string {
    return this.data.id;
  }

  get type(): CellType {
    return this.data.type;
  }

  get source(): string {
    return this.code ? this.code.getCode() : this.data.source;
  }

  get phase(): RunPhase {
    return this.runPhase;
  }

  get editor(): CodeEditor | null {
    return this.code;
  }

  /** Its place in the list (1-based), for its name. */
  setIndex(index: number): void {
    this.index = index;
    const name = t("Cell {n}", { n: index });
    if (this.heading.textContent !== name) this.results.setLabel(name);
    this.heading.textContent = name;
    this.element.setAttribute("aria-label", this.data.type === "code" ? t("Cell {n}, code", { n: index }) : t("Cell {n}, Markdown", { n: index }));
    this.runButton.setAttribute("aria-label", this.runPhase === "idle" ? t("Run cell {n}", { n: index }) : t("Interrupt cell {n}", { n: index }));
    this.runButton.title = this.runPhase === "idle" ? t("Run this cell (Ctrl+Enter; Shift+Enter runs it and moves on)") : t("Interrupt this cell");
  }

  /** Says why the cell is stale (null: it is not). */
  setStale(stale: Staleness): void {
    this.element.dataset.stale = String(stale !== null);
    this.staleLine.hidden = stale === null;
    this.staleLine.replaceChildren();
    if (!stale) return;
    this.staleLine.append(el("span", "chip chip-warn", t("stale")), el("span", null, ...staleParts(stale)));
  }

  /** The cell's place in the queue of a Run all (or a restore): waiting its turn. */
  setQueued(queued: boolean): void {
    this.element.dataset.queued = String(queued);
    this.showCount();
  }

  setActive(active: boolean): void {
    this.element.dataset.active = String(active);
    this.element.tabIndex = active ? 0 : -1;
  }

  /** Focus: command mode on the cell (its outline), or edit mode in its editor. */
  focusCell(): void {
    this.element.focus({ preventScroll: true });
    this.element.scrollIntoView({ block: "nearest" });
  }

  edit(): void {
    if (this.host.readOnly) return;
    if (this.data.type === "markdown") {
      this.editing = true;
      this.render();
    }
    this.element.scrollIntoView({ block: "nearest" });
    this.code?.editor.focus();
  }

  /** A Markdown cell goes back to showing its text rendered. */
  showRendered(): void {
    if (this.data.type !== "markdown") return;
    this.editing = false;
    this.render();
  }

  get isEditing(): boolean {
    return !!this.code?.editor.hasTextFocus();
  }

  setType(type: CellType): void {
    if (type === this.data.type) return;
    this.data.source = this.source;
    this.data.type = type;
    this.data.ran = null;
    this.editing = false;
    this.shownSource = null;
    const model = this.code?.editor.getModel();
    if (model) {
      // The same editor, now of the other language (a Markdown cell's problems are taken off
      // by the notebook as they come).
      monaco.editor.setModelLanguage(model, type === "code" ? "python" : "plaintext");
      this.code!.editor.updateOptions({ wordWrap: type === "code" ? "off" : "on" });
      this.code!.clearMarks();
    }
    if (type === "markdown") this.results.clear();
    this.render();
  }

  setSource(source: string): void {
    this.data.source = source;
    if (this.code) this.code.setCode(source);
    else this.render();
  }

  /** The upstream notice: what a run of the cell would read old values from, and the choice. */
  showNotice(message: Parts, actions: { label: string; primary?: boolean; run(): void }[]): void {
    const buttons = actions.map((action) => {
      const button = el("button", `button button-small${action.primary ? " button-primary" : ""}`, action.label);
      button.type = "button";
      button.addEventListener("click", () => {
        this.hideNotice();
        action.run();
      });
      return button;
    });
    this.notice.replaceChildren(el("p", "cell-notice-text", ...message), el("div", "cell-notice-actions", ...buttons));
    this.notice.hidden = false;
    buttons[0]?.focus();
  }

  hideNotice(): void {
    this.notice.hidden = true;
    this.notice.replaceChildren();
  }

  /** Runs the cell's code with `create` (the session's cell API). */
  start(create: () => Promise<CreatedRun>): Promise<void> {
    this.hideNotice();
    return this.session.startWith(create);
  }

  /** A run shown again (after a reload, or a saved run): its events from the server. */
  resume(): boolean {
    return this.session.resume();
  }

  /** A saved run's events, shown as the cell's run (nothing runs). */
  showSaved(events: readonly RunEvent[]): void {
    this.results.reset();
    this.results.status.clear();
    for (const event of events) {
      this.results.handle(event);
      this.results.status.handle(event);
      this.keep(event);
      this.host.event(this, event);
    }
  }

  outputs(): { streams: CellOutput[]; error: CellError | null } {
    return { streams: this.streams, error: this.error };
  }

  setFontSize(size: number): void {
    this.code?.editor.updateOptions({ fontSize: size });
  }

  showCount(): void {
    const count = this.data.ran?.count;
    const text = this.runPhase !== "idle" || this.element.dataset.queued === "true"
      ? "[*]"
      : count ? `[${count}]` : this.data.type === "code" && !this.host.readOnly ? "[ ]" : "";
    this.count.textContent = text;
  }

  dispose(): void {
    this.dropEditor();
  }

  private keep(event: RunEvent): void {
    if (event.type === "stdout" || event.type === "stderr") {
      const last = this.streams[this.streams.length - 1];
      if (last && last.stream === event.type) last.text += event.text ?? "";
      else this.streams.push({ stream: event.type, text: event.text ?? "" });
    } else if (event.type === "error") {
      this.error = { ename: event.exc_type || "Error", evalue: event.message ?? "", traceback: event.traceback ?? "" };
    }
  }

  private showPhase(phase: RunPhase): void {
    this.runPhase = phase;
    this.element.dataset.phase = phase;
    const idle = phase === "idle";
    this.runButton.replaceChildren(icon(idle ? ICONS.run : ICONS.stop));
    this.runButton.classList.toggle("is-busy", !idle);
    this.runButton.disabled = this.host.readOnly || phase === "cancelling";
    this.setIndex(this.index);
    this.showCount();
    this.host.phase(this, phase);
  }

  private revealLine(line: number): void {
    const editor = this.code?.editor;
    if (!editor) return;
    editor.revealLineInCenterIfOutsideViewport(line);
    editor.setPosition({ lineNumber: line, column: 1 });
    editor.focus();
  }

  private dropEditor(): void {
    const code = this.code;
    if (!code) return;
    this.data.source = code.getCode();
    this.code = null;
    // Its problems are being checked a moment after the last edit (intellisense.ts), on its
    // model, which goes with the editor: both go once that check has read it.
    window.setTimeout(() => code.editor.dispose(), 1500);
  }

  /** Shows the cell as its type and state ask: the editor, or a Markdown cell's rendering. */
  private render(): void {
    const markdown = this.data.type === "markdown";
    this.element.dataset.type = this.data.type;
    this.typeButton.replaceChildren(icon(markdown ? ICONS.code : ICONS.markdown));
    const label = markdown ? t("Make it a code cell (Y)") : t("Make it a Markdown cell (M)");
    this.typeButton.setAttribute("aria-label", label);
    this.typeButton.title = label;
    this.runButton.hidden = markdown || this.host.readOnly;
    const showEditor = !markdown || this.editing;
    if (showEditor && !this.code) this.makeEditor();
    this.editorHost.hidden = !showEditor;
    this.rendered.hidden = showEditor;
    if (!showEditor && this.shownSource !== this.data.source) {
      this.shownSource = this.data.source;
      const nodes = renderMarkdown(this.data.source);
      if (nodes.length) this.rendered.replaceChildren(...nodes);
      else {
        const hint = el("p", "cell-markdown-empty", this.host.readOnly ? t("(empty)") : t("Empty Markdown cell: double-click it, or press Enter, to write."));
        this.rendered.replaceChildren(hint);
      }
    }
    this.showCount();
  }

  private makeEditor(): void {
    const host = this.host;
    const markdown = this.data.type === "markdown";
    this.code = createCellEditor({
      container: this.editorHost,
      workerUrl: host.workerUrl,
      code: this.data.source,
      theme: host.theme(),
      language: markdown ? "plaintext" : "python",
      readOnly: host.readOnly,
      fontSize: host.fontSize(),
      onChange: (text) => {
        this.data.source = text;
        this.shownSource = null;
        host.edited(this);
      },
      onRun: () => this.runKey("stay"),
      onRunAndAdvance: () => this.runKey("advance"),
      onRunAndInsert: () => this.runKey("insert"),
      onLeave: () => {
        if (this.data.type === "markdown") this.showRendered();
        host.leave(this);
      },
      onFontSize: (size) => host.setFontSize(size),
      format: (code) => host.format(code),
    });
    const editor = this.code.editor;
    const model = editor.getModel();
    if (model) setAnalysisContext(model, () => host.codeAbove(this));
    editor.onDidFocusEditorText(() => host.focused(this));
    editor.onDidChangeCursorPosition((e) => {
      if (e.source !== "api") this.results.showSourceLine(e.position.lineNumber);
    });
    editor.onDidBlurEditorText(() => {
      // Clicking elsewhere shows a Markdown cell rendered, as leaving it with Escape does.
      window.setTimeout(() => {
        if (this.data.type !== "markdown" || this.code === null || this.code.editor.hasTextFocus()) return;
        this.showRendered();
      }, 0);
    });
  }

  private runKey(then: "stay" | "advance" | "insert"): void {
    if (this.data.type === "markdown") {
      this.showRendered();
      this.host.run(this, then);
      return;
    }
    this.host.run(this, then);
  }
}
