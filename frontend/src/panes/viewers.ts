// Read-only Monaco views of compiled code: one plain viewer and one diff viewer, created on first
// use and reused for every entry (a model per text, dropped with the run).
import { t } from "../i18n";
import { registerLanguages } from "../languages";
import { MONO_FONT, monaco } from "../monaco";

const COMMON: monaco.editor.IEditorOptions = {
  readOnly: true,
  domReadOnly: true,
  automaticLayout: true,
  minimap: { enabled: false },
  fontFamily: MONO_FONT,
  fontSize: 12.5,
  lineHeight: 19,
  scrollBeyondLastLine: false,
  lineNumbersMinChars: 3,
  renderLineHighlight: "none",
  overviewRulerBorder: false,
  hideCursorInOverviewRuler: true,
  padding: { top: 8, bottom: 8 },
  fixedOverflowWidgets: true,
  renderValidationDecorations: "off",
  wordWrap: "off",
  guides: { indentation: false },
  stickyScroll: { enabled: false },
};

export type Language = "jaxpr" | "hlo";

/** For each line of a text, the snippet line it came from (null where none). */
export type LineMap = (number | null)[];

/**
 * One read-only editor showing one text at a time. A text can come with a line map (the snippet
 * line each of its lines came from): pointing at a line reports its snippet line, and
 * `highlightSource` marks every line that came from a given snippet line.
 */
export class TextViewer {
  private editor: monaco.editor.IStandaloneCodeEditor | null = null;
  private readonly models = new Map<string, monaco.editor.ITextModel>();
  private readonly maps = new Map<monaco.editor.ITextModel, LineMap>();
  private decorations: monaco.editor.IEditorDecorationsCollection | null = null;
  private marked: monaco.editor.IEditorDecorationsCollection | null = null;
  private hovered: number | null = null;

  /** Called with the snippet line under the pointer or the cursor (null: none). */
  onSourceLine: (line: number | null, reveal: boolean) => void = () => {};

  constructor(readonly container: HTMLElement) {}

  /** Shows `text` (cached by `key`: switching back keeps the scroll position's model). */
  show(key: string, text: string, language: Language, lines?: LineMap | null): void {
    registerLanguages();
    let model = this.models.get(key);
    if (!model || model.isDisposed()) {
      model = monaco.editor.createModel(text, language);
      this.models.set(key, model);
      if (lines && lines.length) this.maps.set(model, lines);
    }
    if (!this.editor) {
      this.editor = this.create(model);
    } else if (this.editor.getModel() !== model) {
      this.marked?.clear();
      this.editor.setModel(model);
      this.editor.setScrollPosition({ scrollTop: 0, scrollLeft: 0 });
    }
  }

  /** Whether the text now shown maps its lines to the snippet. */
  get linked(): boolean {
    const model = this.editor?.getModel();
    return !!model && this.maps.has(model);
  }

  /** Marks the lines that came from snippet line `line` (null: none) and shows the first. */
  highlightSource(line: number | null): void {
    const model = this.editor?.getModel();
    const map = model ? this.maps.get(model) : undefined;
    if (!this.editor || !this.decorations) return;
    if (line === null || !map) {
      this.decorations.clear();
      return;
    }
    const ranges: monaco.editor.IModelDeltaDecoration[] = [];
    map.forEach((source, i) => {
      if (source === line && i < model!.getLineCount()) {
        ranges.push({
          range: new monaco.Range(i + 1, 1, i + 1, 1),
          options: { isWholeLine: true, className: "linked-line", overviewRuler: undefined },
        });
      }
    });
    this.decorations.set(ranges);
    if (ranges.length) {
      const first = ranges[0].range.startLineNumber;
      const visible = this.editor.getVisibleRanges();
      const shown = visible.some((r) => ranges.some((d) => d.range.startLineNumber >= r.startLineNumber && d.range.startLineNumber <= r.endLineNumber));
      if (!shown) this.editor.revealLineInCenter(first);
    }
  }

  /** Scrolls line `line` (1-based) of the text shown to the middle and marks it, until another
   *  text is shown or another line marked. */
  markLine(line: number): void {
    const editor = this.editor;
    if (!editor || !this.marked) return;
    const reveal = () => {
      editor.revealLineInCenter(line);
      editor.setPosition({ lineNumber: line, column: 1 });
    };
    this.marked.set([{ range: new monaco.Range(line, 1, line, 1), options: { isWholeLine: true, className: "marked-line" } }]);
    reveal();
    // A viewer just shown is laid out in the next frame: the line goes to the middle again then.
    requestAnimationFrame(reveal);
  }

  /** The line marked by markLine (0: none), for tests. */
  markedLine(): number {
    return this.marked?.getRanges()[0]?.startLineNumber ?? 0;
  }

  /** The text now shown, as Monaco holds it (for tests and copy). */
  text(): string {
    return this.editor?.getModel()?.getValue() ?? "";
  }

  clear(): void {
    this.editor?.setModel(null);
    this.decorations?.clear();
    for (const model of this.models.values()) model.dispose();
    this.models.clear();
    this.maps.clear();
  }

  private create(model: monaco.editor.ITextModel): monaco.editor.IStandaloneCodeEditor {
    const editor = monaco.editor.create(this.container, {
      ...COMMON,
      model,
      ariaLabel: t("Compiled code (read-only)"),
    });
    this.decorations = editor.createDecorationsCollection();
    this.marked = editor.createDecorationsCollection();
    const sourceOf = (lineNumber: number | undefined): number | null => {
      const current = editor.getModel();
      const map = current ? this.maps.get(current) : undefined;
      if (!map || !lineNumber) return null;
      return map[lineNumber - 1] ?? null;
    };
    editor.onMouseMove((e) => {
      const line = sourceOf(e.target.position?.lineNumber);
      if (line === this.hovered) return;
      this.hovered = line;
      this.onSourceLine(line, false);
    });
    editor.onMouseLeave(() => {
      if (this.hovered === null) return;
      this.hovered = null;
      this.onSourceLine(null, false);
    });
    editor.onDidChangeCursorPosition((e) => {
      if (e.source === "api") return;
      const line = sourceOf(e.position.lineNumber);
      if (line !== null) this.onSourceLine(line, true);
    });
    return editor;
  }
}

/** A read-only diff of two texts: side by side when there is room, inline otherwise. */
export class DiffViewer {
  private editor: monaco.editor.IStandaloneDiffEditor | null = null;
  private models: monaco.editor.ITextModel[] = [];

  constructor(readonly container: HTMLElement) {}

  show(left: string, right: string, language: Language): void {
    registerLanguages();
    if (!this.editor) {
      this.editor = monaco.editor.createDiffEditor(this.container, {
        ...COMMON,
        originalEditable: false,
        renderSideBySide: true,
        useInlineViewWhenSpaceIsLimited: true,
        renderSideBySideInlineBreakpoint: 560,
        renderOverviewRuler: false,
        ignoreTrimWhitespace: false,
        diffWordWrap: "off",
        ariaLabel: t("Difference between two compiled texts (read-only)"),
      });
      // Each side's own name, read where the focus lands (the diff editor's options for these
      // do not reach its two editors' text areas).
      this.editor.getOriginalEditor().updateOptions({ ariaLabel: t("Compiled text on the left (read-only)") });
      this.editor.getModifiedEditor().updateOptions({ ariaLabel: t("Compiled text on the right (read-only)") });
    }
    const original = monaco.editor.createModel(left, language);
    const modified = monaco.editor.createModel(right, language);
    this.editor.setModel({ original, modified });
    // The worker may still be diffing the previous pair: disposed now, that diff comes back
    // empty and Monaco throws ("no diff result available"). They go once it has had its time.
    const previous = this.models;
    window.setTimeout(() => previous.forEach((model) => model.dispose()), 5000);
    this.models = [original, modified];
  }

  clear(): void {
    this.editor?.setModel(null);
    for (const model of this.models) model.dispose();
    this.models = [];
  }
}

/** Highlighted HTML for a static block (the side-by-side jaxprs). Monaco escapes the text. */
export async function colorize(text: string, language: Language): Promise<string> {
  registerLanguages();
  return monaco.editor.colorize(text, language, { tabSize: 4 });
}
