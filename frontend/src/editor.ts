// Monaco, trimmed to what a Python playground uses.
//
// Since monaco-editor 0.56 the package's "exports" map sends `monaco-editor/<x>` to
// `esm/vs/<x>.js`. `monaco-editor` itself would pull in every language and feature (several MB);
// we import the bare editor API, the features we want and the Python tokenizer only.
import * as monaco from "monaco-editor/editor";

import "monaco-editor/features/codicon/register";
import "monaco-editor/features/bracketMatching/register";
import "monaco-editor/features/clipboard/register";
import "monaco-editor/features/comment/register";
import "monaco-editor/features/contextmenu/register";
import "monaco-editor/features/cursorUndo/register";
import "monaco-editor/features/find/register";
import "monaco-editor/features/folding/register";
import "monaco-editor/features/gotoError/register";
import "monaco-editor/features/hover/register";
import "monaco-editor/features/indentation/register";
import "monaco-editor/features/linesOperations/register";
import "monaco-editor/features/multicursor/register";
import "monaco-editor/features/suggest/register";
import "monaco-editor/features/wordHighlighter/register";
import "monaco-editor/features/wordOperations/register";
import "monaco-editor/languages/definitions/python/register";

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
  markers(): { line: number; message: string; severity: string }[];
}

/**
 * The editor worker runs Monaco's diffing and word-based suggestions off the main thread. It is
 * bundled separately as a classic (IIFE) worker; the page tells us its URL, because /static/
 * may be served with hashed names.
 */
function installWorker(workerUrl: string): void {
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
}): CodeEditor {
  installWorker(options.workerUrl);
  const editor = monaco.editor.create(options.container, {
    value: options.code,
    language: "python",
    theme: themeName(options.theme),
    automaticLayout: true,
    fontSize: 14,
    lineHeight: 21,
    fontFamily:
      'ui-monospace, "SF Mono", "Cascadia Code", "JetBrains Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace',
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
    ariaLabel: "Python code editor",
  });
  const model = editor.getModel()!;
  model.onDidChangeContent(() => options.onChange(model.getValue()));
  editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, () => options.onRun());

  const glyphs = editor.createDecorationsCollection();

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
    markers: () =>
      monaco.editor.getModelMarkers({ owner: MARKER_OWNER }).map((m) => ({
        line: m.startLineNumber,
        message: m.message,
        severity: monaco.MarkerSeverity[m.severity],
      })),
  };
}

function themeName(theme: EditorTheme): string {
  return theme === "dark" ? "vs-dark" : "vs";
}
