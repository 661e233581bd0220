// What both editor pages are built on (the playground's, with a snippet's and the embed, and an
// assignment's): the code editor and the run's Input under it, the result panes under their tab
// bar, one run at a time with its status line, Run and Cancel, the header and the splitter. A page makes one and adds its own
// parts around it (src/pages/).
import { Announcer } from "./announce";
import { formatCode, type CreatedRun, type RunOptions } from "./api";
import { byId, focusAfter, maybeById } from "./dom";
import { clampFontSize, createEditor, DEFAULT_FONT_SIZE, monaco, type CodeEditor, type EditorTheme } from "./editor";
import type { ProfileEvent, RunEvent } from "./events";
import { explanationText } from "./explanations";
import { bindHeader } from "./header";
import { t } from "./i18n";
import { quickFixFor, setRunShapes } from "./intellisense";
import { CompiledPane } from "./panes/compiled";
import { FiguresPane } from "./panes/figures";
import { OutputPane } from "./panes/output";
import { Tabs, type Pane } from "./panes/pane";
import { TimelinePane } from "./panes/timeline";
import { TimingPane } from "./panes/timing";
import { runShortcut } from "./platform";
import { ProfileToggle } from "./profile/toggle";
import { RunSession, type RunPhase, type RunView } from "./run";
import { bindSplitter } from "./split";
import { StatusLine } from "./status";
import { InputBox, type InputOptions } from "./stdin";
import { KEYS, local } from "./storage";
import { currentTheme } from "./theme";

export interface WorkbenchOptions {
  /** The code the editor starts with. */
  code: string;
  /** Makes a run of `code`: api.ts startRun, or an assignment's own endpoint. `options`: as
   *  the page's toggles ask (Profile), when it has them. `stdin`: the Input's text ("": none),
   *  when the page has one. */
  startRun(code: string, options?: RunOptions, stdin?: string): Promise<CreatedRun>;
  /** The run's Input (stdin.ts) under the editor: what it starts with, and its changes. */
  input?: InputOptions;
  /** Profile beside Run: runs may be profiled (their options say so), their timeline shown. */
  profiling?: boolean;
  /** Its runs start with api.ts startRun: a socket for the next one is kept open (RunLauncher). */
  runSocket?: boolean;
  /** Where this tab keeps the id of the run it shows: each page its own. */
  runKey: string;
  /** The theme the embedding page asks for (the embed), which wins over the site's. */
  forcedTheme?: EditorTheme | null;
  /** The editor's code changed. */
  onChange?(code: string): void;
  /** Ctrl/Cmd+S in the editor. */
  onSave?(): void;
  /** F1 in the editor. */
  onHelp?(): void;
  /** The result panes' tab bar and panels; the page's #tabs and #tab-panels unless given. */
  tabs?: { bar: HTMLElement; panels: HTMLElement };
  /** More views of each run, and of a saved run shown in its place; after the panes and the
   *  editor's marks. */
  views?: RunView[];
  /** More views of the runs made here only (not of a saved run); after the screen reader's. */
  liveViews?: RunView[];
  /** The editor's hover shows the error's explanation under its message (default true). */
  explainErrors?: boolean;
  /** The formatter's complaint about a line scrolls the editor to it (default true). */
  revealFormatErrors?: boolean;
  /** Nothing may run here (an archived course): Run stays disabled. */
  readOnly?: boolean;
  /** A run the person asked for (Run, Ctrl/Cmd+Enter) is about to start. */
  beforeRun?(): void;
  /** Whether Ctrl/Cmd+Enter outside the editor runs now (default: always). */
  runsFromPage?(): boolean;
  /** Whether the run being shown may be cancelled (default: always). */
  cancellable?(): boolean;
  /** The run's phase changed; Run and Cancel have followed it already. */
  onPhase?(phase: RunPhase): void;
}

export class Workbench {
  readonly code: CodeEditor;
  readonly status: StatusLine;
  readonly output: OutputPane;
  readonly compiled: CompiledPane;
  readonly timeline: TimelinePane;
  /** Profile beside Run, on the pages that profile runs. */
  readonly profile: ProfileToggle | null;
  /** The result panes' tabs: Output, Compiled, Timing, Figures, Timeline. */
  readonly tabs: Tabs;
  readonly session: RunSession;
  /** The run's Input, on the pages that have one. */
  readonly input: InputBox | null;
  /** What a screen reader hears of a run; a page may say more through it. */
  readonly announcer = new Announcer();
  readonly runButton = byId<HTMLButtonElement>("run-button");
  readonly cancelButton = byId<HTMLButtonElement>("cancel-button");
  /** The views a saved run is shown to: all but the announcer and the live-only ones. */
  private readonly savedViews: RunView[];
  private readonly readOnly: boolean;

  constructor(private readonly options: WorkbenchOptions) {
    this.readOnly = options.readOnly ?? false;
    this.status = new StatusLine(byId("run-status"), byId("wall-time"), byId("run-info"), byId("run-message"));
    const code = createEditor({
      container: byId("editor"),
      workerUrl: editorWorkerUrl(),
      code: options.code,
      theme: options.forcedTheme ?? currentTheme(),
      onChange: (text) => options.onChange?.(text),
      onRun: () => void this.run(),
      onSave: options.onSave,
      onLeave: () => focusAfter(byId("editor")),
      onHelp: options.onHelp,
      format: formatCode,
      onFormatError: (message, line) => {
        this.status.say(t("Not formatted: {message}", { message }), "warning");
        if (options.revealFormatErrors !== false && line !== null) code.editor.revealLineInCenterIfOutsideViewport(line);
      },
      fontSize: applyFontSize(Number(local.get(KEYS.fontSize) ?? DEFAULT_FONT_SIZE)),
      onFontSize: (size) => {
        local.set(KEYS.fontSize, String(size));
        applyFontSize(size);
      },
    });
    this.code = code;
    document.getElementById("editor-loading")?.remove();
    // Under the editor (and its key bindings' status line), in the editor's panel.
    this.input = options.input ? new InputBox(options.input) : null;
    if (this.input) (byId("editor").closest(".panel") ?? byId("editor").parentElement)?.append(this.input.element);
    maybeById("format-code")?.addEventListener("click", () => {
      void code.editor.getAction("editor.action.formatDocument")?.run();
    });
    wrapToggle(code, maybeById("wrap-code"));

    // Result panes, in tab order. New content marks a tab but never switches to it.
    const revealLine = (line: number) => {
      code.editor.revealLineInCenter(line);
      code.editor.setPosition({ lineNumber: line, column: 1 });
      code.editor.focus();
    };
    this.compiled = new CompiledPane({ highlight: (line, reveal) => code.linkLine(line, reveal), goTo: revealLine });
    code.onCursorLine((line) => this.compiled.showSourceLine(line));
    this.output = new OutputPane(
      revealLine,
      () => this.tabs.summary().filter((p) => p.id !== this.output.id),
      (id) => this.tabs.select(id),
    );
    this.output.offerFixes((event) => quickFixFor(code.editor, event.explanation_template));
    this.timeline = new TimelinePane({
      showHlo: (module, op) => {
        // In view first: the viewer lays its text out only where it is shown.
        this.tabs.select(this.compiled.id);
        return this.compiled.revealHlo(module, op);
      },
      goTo: revealLine,
    }, () => this.profile?.on ?? false);
    const panes: Pane[] = [this.output, this.compiled, new TimingPane(), new FiguresPane(revealLine), this.timeline];
    const bar = options.tabs?.bar ?? byId("tabs");
    const panels = options.tabs?.panels ?? byId("tab-panels");
    this.tabs = new Tabs(bar, panels, panes);

    // The editor shows where the exception came from, until the next run.
    const marks: RunView = {
      reset: () => code.clearMarks(),
      idle: () => code.clearMarks(),
      handle: (event) => {
        if (event.type === "error" && typeof event.line === "number") {
          const explained = options.explainErrors !== false ? explanationText(event as unknown as Record<string, unknown>) : null;
          const explanation = explained ? `\n\n${explained}` : "";
          code.markError(event.line, `${event.exc_type}: ${event.message}${explanation}`);
        }
      },
    };
    // Hovering a top-level name shows what it held when the run ended (the "shapes" event), for
    // the code that run ran (the editor's when the run was shown or started).
    let shownCode = code.getCode();
    const model = code.editor.getModel()!;
    const shapes: RunView = {
      reset: () => {
        shownCode = code.getCode();
        setRunShapes(model, shownCode, null);
      },
      handle: (event) => {
        if (event.type === "shapes" && event.names && typeof event.names === "object") {
          setRunShapes(model, shownCode, event.names);
        }
      },
    };
    this.savedViews = [this.tabs, marks, shapes, ...(options.views ?? [])];
    // A run that ends badly is shown where it says why: the Output tab, with the error, its
    // explanation and its line (what the person asked for when they pressed Run). Only at the
    // end, so a tab opened while the run goes on is not taken away; a cancelled run stays put.
    const showFailure: RunView = {
      reset: () => {},
      handle: (event) => {
        if (event.type === "finished" && FAILED.has(event.status)) this.tabs.select(this.output.id);
      },
    };
    this.session = new RunSession(
      [...this.savedViews, this.announcer, showFailure, ...(options.liveViews ?? [])],
      this.status,
      (phase) => this.showPhase(phase),
      options.runKey,
    );

    this.profile = options.profiling ? new ProfileToggle(this.runButton, () => this.timeline.present()) : null;
    this.timeline.present();
    this.runButton.addEventListener("click", () => void this.run());
    this.cancelButton.addEventListener("click", () => void this.session.cancel());
    const shortcut = maybeById("run-shortcut");
    if (shortcut) shortcut.textContent = runShortcut();
    this.runButton.title = t("Run ({keys})", { keys: runShortcut().replace(" ↵", "+Enter") });
    // Ctrl/Cmd+Enter outside the editor too (the editor has its own keybinding, which stops the
    // event before it reaches the document).
    document.addEventListener("keydown", (e) => {
      if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || e.key !== "Enter") return;
      e.preventDefault();
      if (options.runsFromPage?.() ?? true) void this.run();
    });

    bindHeader((theme) => code.setTheme(theme), options.forcedTheme ?? null);
    const splitter = maybeById("splitter");
    if (splitter) bindSplitter(byId("workspace"), splitter);
  }

  /** The result panes' ids, in tab order (a page with tabs of its own tells them apart by these). */
  get paneIds(): readonly string[] {
    return this.tabs.panes.map((pane) => pane.id);
  }

  /** Runs the editor's code, unless a run is on its way already (or nothing may run here). */
  async run(): Promise<void> {
    if (this.session.busy || this.readOnly) return;
    this.options.beforeRun?.();
    const text = this.code.getCode();
    const options: RunOptions = this.profile?.on ? { profile: true } : {};
    const stdin = this.input?.value ?? "";
    await this.session.startWith(() => this.options.startRun(text, options, stdin));
  }

  /** The page is ready: Run can be pressed, and the run this tab showed before a reload is
   *  shown again. Whether there was one. */
  start(): boolean {
    this.runButton.disabled = this.readOnly;
    const resumed = this.session.resume();
    if (this.options.runSocket && !this.readOnly) this.session.prepareRuns();
    return resumed;
  }

  /** Says `text` unless a run is being shown or started, whose messages come first. */
  notice(text: string, tone?: "muted" | "info" | "warning" | "error"): void {
    if (!this.session.busy && !this.session.id) this.status.say(text, tone);
  }

  /** Shows a saved run's events as the run (nothing runs, so the announcer and the live-only
   *  views do not hear them); the Output pane says it is the saved one. */
  showSaved(events: readonly RunEvent[]): void {
    this.status.clear();
    for (const view of this.savedViews) view.reset();
    this.output.showSaved();
    for (const event of events) {
      for (const view of this.savedViews) view.handle(event);
      this.status.handle(event);
    }
  }

  /** What `window.playground` offers on every editor page, for tests and the console. */
  hooks(): Record<string, unknown> {
    return {
      editor: this.code.editor,
      getCode: this.code.getCode,
      setCode: this.code.setCode,
      markers: this.code.markers,
      run: () => this.run(),
      runId: () => this.session.id,
      getInput: () => this.input?.value ?? "",
      setInput: (text: string) => this.input?.load(text),
      compiledNames: () => this.compiled.names(),
      compiledText: () => this.compiled.shownText(),
      selectTab: (id: string) => this.tabs.select(id),
      compiledMarkedLine: () => this.compiled.markedLine(),
      // The Timeline tab without a run: a trace drawn as a profile would bring it.
      showTrace: (trace: unknown, event?: Partial<ProfileEvent>) => {
        const shown = this.timeline.showTrace(trace, event);
        this.tabs.select(this.timeline.id); // there now: it has a profile
        return shown;
      },
      timelineStats: () => this.timeline.stats(),
      timelineLanes: () => this.timeline.lanes(),
      timelineLocate: (query: Parameters<TimelinePane["locate"]>[0]) => this.timeline.locate(query),
    };
  }

  private showPhase(phase: RunPhase): void {
    const idle = phase === "idle";
    this.runButton.disabled = !idle || this.readOnly;
    this.runButton.classList.toggle("is-busy", !idle);
    this.cancelButton.hidden = idle || phase === "submitting" || !(this.options.cancellable?.() ?? true);
    this.cancelButton.disabled = phase === "cancelling";
    this.options.onPhase?.(phase);
  }
}

/** The endings that show the Output tab: the run did not do what it was asked. */
const FAILED = new Set(["failed", "timed_out", "limit_exceeded", "lost"]);

/** The editor worker's URL, as the page gives it (/static/ may have hashed names). */
export function editorWorkerUrl(): string {
  return document.body.dataset.workerUrl || "/static/editor.worker.js";
}

/** The output's text follows the editor's size (one px smaller, as by default). */
function applyFontSize(size: number): number {
  const px = clampFontSize(size);
  document.documentElement.style.setProperty("--output-font-size", `${px - 1}px`);
  return px;
}

/**
 * Long lines wrapped or not, by choice (Wrap in the editor's header, or Alt+Z as in VS Code),
 * remembered in this browser. Off at first: code's indentation reads best unwrapped on a wide
 * screen, and on a phone a person who wants the whole line turns it on once.
 */
function wrapToggle(code: CodeEditor, button: HTMLElement | null): void {
  const apply = (on: boolean) => {
    code.editor.updateOptions({ wordWrap: on ? "on" : "off", wrappingIndent: "indent" });
    button?.setAttribute("aria-pressed", String(on));
  };
  const toggle = () => {
    const on = local.get(KEYS.codeWrap) !== "true";
    local.set(KEYS.codeWrap, on ? "true" : null);
    apply(on);
  };
  apply(local.get(KEYS.codeWrap) === "true");
  button?.addEventListener("click", toggle);
  code.editor.addCommand(monaco.KeyMod.Alt | monaco.KeyCode.KeyZ, toggle);
}
