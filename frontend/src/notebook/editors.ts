// The cells' editors: the playground's code editor (editor.ts: completion, hover, problems,
// shapes, Ctrl+Enter, Escape...), one per cell, its height following its code.
//
// Monaco keeps one keybinding service for every editor of a page, so a command an editor adds
// (`addCommand`) would answer its key in whichever editor has the focus, the last one added
// winning. Each cell's editor therefore adds its commands under a context key of its own, true
// only while that editor has the focus: Ctrl+Enter in a cell runs that cell.
import { createEditor, type CodeEditor, type EditorTheme } from "../editor";
import { t } from "../i18n";
import { monaco } from "../monaco";

let scoping = false;
let scopes = 0;

monaco.editor.onDidCreateEditor((created) => {
  if (!scoping) return;
  const editor = created as monaco.editor.IStandaloneCodeEditor;
  const key = `notebookCellFocus${++scopes}`;
  let focused: monaco.editor.IContextKey<boolean> | null = null;
  const add = editor.addCommand.bind(editor);
  editor.addCommand = (keybinding, handler, context) => {
    if (!focused) {
      // Made at the first command, once the editor is whole.
      const k = editor.createContextKey<boolean>(key, editor.hasTextFocus());
      focused = k;
      editor.onDidFocusEditorText(() => k.set(true));
      editor.onDidBlurEditorText(() => k.set(false));
    }
    return add(keybinding, handler, context ? `${key} && (${context})` : key);
  };
});

export interface CellEditorOptions {
  container: HTMLElement;
  workerUrl: string;
  code: string;
  theme: EditorTheme;
  language: "python" | "plaintext";
  readOnly: boolean;
  fontSize: number;
  onChange(code: string): void;
  onRun(): void;
  onRunAndAdvance(): void;
  onRunAndInsert(): void;
  onLeave(): void;
  onFontSize(size: number): void;
  format?(code: string): Promise<string>;
  onFormatError?(message: string, line: number | null): void;
}

/** Lines a cell's editor shows before it scrolls. */
const MAX_LINES = 40;
const LINE_HEIGHT = 21;

export function createCellEditor(options: CellEditorOptions): CodeEditor {
  scoping = true;
  let code: CodeEditor;
  try {
    code = createEditor({
      container: options.container,
      workerUrl: options.workerUrl,
      code: options.code,
      theme: options.theme,
      onChange: options.onChange,
      onRun: options.onRun,
      onLeave: options.onLeave,
      format: options.format,
      onFormatError: options.onFormatError,
      fontSize: options.fontSize,
      onFontSize: options.onFontSize,
      problems: !options.readOnly,
    });
    const editor = code.editor;
    editor.addCommand(monaco.KeyMod.Shift | monaco.KeyCode.Enter, () => options.onRunAndAdvance());
    editor.addCommand(monaco.KeyMod.Alt | monaco.KeyCode.Enter, () => options.onRunAndInsert());
  } finally {
    scoping = false;
  }
  const editor = code.editor;
  if (options.language !== "python") monaco.editor.setModelLanguage(editor.getModel()!, options.language);
  editor.updateOptions({
    readOnly: options.readOnly,
    domReadOnly: options.readOnly,
    padding: { top: 8, bottom: 8 },
    lineNumbersMinChars: 3,
    renderLineHighlightOnlyWhenFocus: true,
    overviewRulerLanes: 0,
    folding: false,
    stickyScroll: { enabled: false },
    wordWrap: options.language === "plaintext" ? "on" : "off",
    // The page scrolls over a cell; the editor scrolls only what it holds beyond its height.
    scrollbar: { alwaysConsumeMouseWheel: false, verticalScrollbarSize: 10, horizontalScrollbarSize: 10 },
    ariaLabel: options.language === "python"
      ? t("Code cell. Shift+Enter runs it and moves on, Ctrl+Enter runs it, Escape leaves for the cell list.")
      : t("Markdown cell. Shift+Enter shows it, Escape leaves for the cell list."),
  });
  // As tall as its code (up to MAX_LINES lines), so that the page, not each cell, scrolls.
  const fit = () => {
    // Its host's border is inside the height given (border-box).
    const height = Math.min(editor.getContentHeight(), MAX_LINES * LINE_HEIGHT + 16) + 2;
    if (options.container.style.height !== `${height}px`) options.container.style.height = `${height}px`;
  };
  editor.onDidContentSizeChange(fit);
  fit();
  return code;
}
