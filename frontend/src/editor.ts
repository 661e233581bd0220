// The code editor: Monaco with Python, Ctrl+Enter to run and a marker on the line that raised.
import { t } from "./i18n";
import { themeName } from "./languages";
import { registerPythonIntellisense, watchComposition, watchProblems, whenComposed } from "./intellisense";
import { MONO_FONT, monaco } from "./monaco";

export { monaco };

const MARKER_OWNER = "run";

export type EditorTheme = "light" | "dark";

export interface CodeEditor {
  readonly editor: monaco.editor.IStandaloneCodeEditor;
  getCode(): string;
  setCode(code: string): void;
  setTheme(theme: EditorTheme): void;
  /** Marks the line an exception came from: a squiggle, a glyph and a hover message. */
  markError(line: number, message: string): void;
  clearMarks(): void;
  /** This editor's markers: the run's (the line that raised), or another owner's ("problems": ruff's,
   *  "fullwidth": full-width punctuation in code). */
  markers(owner?: string): { line: number; column: number; message: string; severity: string }[];
  /** Marks the line a piece of compiled code came from (null: none). */
  linkLine(line: number | null, reveal: boolean): void;
  /** Called with the cursor's line when the person moves it. */
  onCursorLine(listener: (line: number) => void): void;
  /** Vim's bindings are on: Escape is Vim's, not "leave the editor". */
  setVimMode(on: boolean): void;
}

/**
 * The editor worker runs Monaco's diffing and word-based suggestions off the main thread. It is
 * bundled separately as a classic (IIFE) worker; the page tells us its URL, because /static/
 * may be served with hashed names.
 */
export function installWorker(workerUrl: string): void {
  (self as unknown as { MonacoEnvironment: monaco.Environment }).MonacoEnvironment = {
    getWorker: (_workerId: string, label: string) => new Worker(workerUrl, { name: label }),
  };
}

export function createEditor(options: {
  container: HTMLElement;
  workerUrl: string;
  code: string;
  theme: EditorTheme;
  onChange(code: string): void;
  onRun(): void;
  /** Ctrl/Cmd+S (the browser's "save page" is not wanted here). */
  onSave?(): void;
  /** Escape with none of the editor's own widgets open: focus goes on, out of the editor. */
  onLeave?(): void;
  /** F1: the keyboard shortcuts. */
  onHelp?(): void;
  /** Formats code (Shift+Alt+F, and "Format Document" in the context menu). */
  format?(code: string): Promise<string>;
  /** The formatter could not format (not valid Python...): what to tell the person. */
  onFormatError?(message: string, line: number | null): void;
  /** The font size to start with (px), and where a change of it (Ctrl+= / Ctrl+- / Ctrl+0) goes. */
  fontSize?: number;
  onFontSize?(size: number): void;
  /** Problems as you type (syntax errors, undefined names...) as markers; on unless false. */
  problems?: boolean;
}): CodeEditor {
  installWorker(options.workerUrl);
  // The context menu is drawn in a shadow root that Monaco hangs on this container (the overflow
  // widgets are fixed), outside .monaco-editor: as a "monaco-component" the container carries
  // the theme's colours down to it, or the menu has neither background nor shadow.
  options.container.classList.add("monaco-component");
  const editor = monaco.editor.create(options.container, {
    value: options.code,
    language: "python",
    theme: themeName(options.theme),
    automaticLayout: true,
    fontSize: clampFontSize(options.fontSize ?? DEFAULT_FONT_SIZE),
    lineHeight: 21,
    fontFamily: MONO_FONT,
    minimap: { enabled: false },
    glyphMargin: true,
    lineNumbersMinChars: 3,
    overviewRulerBorder: false,
    hideCursorInOverviewRuler: true,
    scrollBeyondLastLine: false,
    renderLineHighlight: "line",
    tabSize: 4,
    insertSpaces: true,
    padding: { top: 12, bottom: 12 },
    fixedOverflowWidgets: true,
    // Enter takes a suggestion only when it changes the text ("import jax" + Enter is a new line).
    acceptSuggestionOnEnter: "smart",
    ariaLabel: t("Python code editor. Escape leaves the editor; Ctrl+M switches Tab between indenting and moving focus; F1 lists the shortcuts."),
  });
  const model = editor.getModel()!;
  model.onDidChangeContent(() => options.onChange(model.getValue()));
  registerPythonIntellisense();
  watchComposition(editor);
  if (options.problems !== false) watchProblems(editor);
  editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, () => options.onRun());
  const onSave = options.onSave;
  if (onSave) editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.KeyS, () => onSave());
  // Ctrl+= / Ctrl+- / Ctrl+0 (Cmd on a Mac) size the code's font, not the whole page.
  const resize = (size: number) => {
    const next = clampFontSize(size);
    editor.updateOptions({ fontSize: next });
    options.onFontSize?.(next);
  };
  const current = () => editor.getOption(monaco.editor.EditorOption.fontSize);
  editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Equal, () => resize(current() + 1));
  editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Minus, () => resize(current() - 1));
  editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Digit0, () => resize(DEFAULT_FONT_SIZE));
  // The keyboard is never trapped in the editor: Escape leaves it unless one of its own widgets
  // (suggestions, find, a rename...) is open, where Escape closes that widget first.
  const onLeave = options.onLeave;
  const vimMode = editor.createContextKey<boolean>("playgroundVimMode", false);
  if (onLeave) {
    editor.addCommand(monaco.KeyCode.Escape, () => onLeave(),
      "!suggestWidgetVisible && !findWidgetVisible && !parameterHintsVisible && !inSnippetMode"
      + " && !editorHasMultipleSelections && !renameInputVisible && !markersNavigationVisible"
      + " && !playgroundVimMode");
  }
  const onHelp = options.onHelp;
  if (onHelp) editor.addCommand(monaco.KeyCode.F1, () => onHelp());
  const format = options.format;
  if (format) {
    registerFormatter(format, options.onFormatError);
    // Shift+Alt+F on every system (Monaco binds Ctrl+Shift+I on Linux, which also works).
    editor.addCommand(monaco.KeyMod.Shift | monaco.KeyMod.Alt | monaco.KeyCode.KeyF,
      () => void editor.getAction("editor.action.formatDocument")?.run());
  }

  // Shift+Tab back into the editor from a control after it keeps going backwards: the next
  // Shift+Tab moves on instead of unindenting, until any other key (or a click) is pressed.
  // Going forwards, Tab into the editor starts typing, and Escape leaves it.
  let shiftTabAt = -Infinity;
  let passThrough = false;
  const setPassThrough = (on: boolean) => {
    if (passThrough === on) return;
    passThrough = on;
    editor.updateOptions({ tabFocusMode: on });
  };
  document.addEventListener("keydown", (e) => {
    if (e.key === "Tab" && e.shiftKey) shiftTabAt = performance.now();
  }, true);
  editor.onDidFocusEditorText(() => setPassThrough(performance.now() - shiftTabAt < 300));
  editor.onDidBlurEditorText(() => setPassThrough(false));
  editor.onMouseDown(() => setPassThrough(false));
  editor.onKeyDown((e) => {
    const modifierOnly = [monaco.KeyCode.Shift, monaco.KeyCode.Ctrl, monaco.KeyCode.Alt, monaco.KeyCode.Meta].includes(e.keyCode);
    if (passThrough && !modifierOnly && !(e.keyCode === monaco.KeyCode.Tab && e.shiftKey)) setPassThrough(false);
  });

  const glyphs = editor.createDecorationsCollection();
  const linked = editor.createDecorationsCollection();

  return {
    editor,
    getCode: () => model.getValue(),
    setCode: (code) => {
      // pushEditOperations keeps the change undoable, unlike setValue.
      model.pushEditOperations([], [{ range: model.getFullModelRange(), text: code }], () => null);
    },
    setTheme: (theme) => monaco.editor.setTheme(themeName(theme)),
    markError(line, message) {
      if (!Number.isInteger(line) || line < 1 || line > model.getLineCount()) return;
      const range = {
        startLineNumber: line,
        startColumn: model.getLineFirstNonWhitespaceColumn(line) || 1,
        endLineNumber: line,
        endColumn: model.getLineMaxColumn(line),
      };
      monaco.editor.setModelMarkers(model, MARKER_OWNER, [
        { ...range, severity: monaco.MarkerSeverity.Error, message },
      ]);
      glyphs.set([
        {
          range,
          options: {
            isWholeLine: true,
            className: "editor-error-line",
            glyphMarginClassName: "editor-error-glyph codicon codicon-error",
            glyphMarginHoverMessage: { value: message },
          },
        },
      ]);
      editor.revealLineInCenterIfOutsideViewport(line);
    },
    clearMarks() {
      monaco.editor.setModelMarkers(model, MARKER_OWNER, []);
      glyphs.clear();
    },
    linkLine(line, reveal) {
      if (line === null || !Number.isInteger(line) || line < 1 || line > model.getLineCount()) {
        linked.clear();
        return;
      }
      linked.set([
        { range: new monaco.Range(line, 1, line, 1), options: { isWholeLine: true, className: "linked-line" } },
      ]);
      if (reveal) editor.revealLineInCenterIfOutsideViewport(line);
    },
    setVimMode: (on) => vimMode.set(on),
    onCursorLine(listener) {
      editor.onDidChangeCursorPosition((e) => {
        if (e.source !== "api" && e.reason !== 1 /* ContentFlush */) listener(e.position.lineNumber);
      });
    },
    markers: (owner = MARKER_OWNER) =>
      monaco.editor.getModelMarkers({ owner, resource: model.uri }).map((m) => ({
        line: m.startLineNumber,
        column: m.startColumn,
        message: m.message,
        severity: monaco.MarkerSeverity[m.severity],
      })),
  };
}

let formatterRegistered = false;

/** Python's document formatter: the whole text, formatted by ``format``; one undoable edit. */
function registerFormatter(format: (code: string) => Promise<string>, onError?: (message: string, line: number | null) => void): void {
  if (formatterRegistered) return;
  formatterRegistered = true;
  monaco.languages.registerDocumentFormattingEditProvider("python", {
    displayName: "ruff",
    async provideDocumentFormattingEdits(model) {
      // Not the half-typed text of an input method's composition: the text once it is done.
      await new Promise<void>((done) => whenComposed(model, done));
      const before = model.getValue();
      try {
        const after = await format(before);
        if (after === before || model.getValue() !== before) return [];
        return [{ range: model.getFullModelRange(), text: after }];
      } catch (error) {
        const message = (error as Error).message;
        const line = /\bline (\d+)/.exec(message);
        onError?.(message, line ? Number(line[1]) : null);
        return [];
      }
    },
  });
}

export const DEFAULT_FONT_SIZE = 14;

export function clampFontSize(size: number): number {
  return Number.isFinite(size) ? Math.min(28, Math.max(10, Math.round(size))) : DEFAULT_FONT_SIZE;
}
