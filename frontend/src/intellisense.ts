// What the editor knows about the code while it is typed: completion (with each item's
// signature and the first lines of its doc), signature help inside a call, docs on hover, and
// the code's problems as markers. Completion, signatures and hover come from the analysers on
// the executor nodes (POST /api/analyse: jedi, in the environment the runs use); problems from
// POST /api/lint (ruff), and full-width punctuation typed with a Chinese input method (fullwidth.ts)
// with its quick fixes. The providers are Python's, registered once for every editor of the page;
// a request that a newer keystroke supersedes is aborted here and skipped there.
//
// While an input method composes (pinyin on its way to 你好), the text in the editor is not yet
// the person's: nothing is asked of the server, no marker changes and no completion opens; what
// was held back runs once the composition ends.
import { csrfToken } from "./api";
import { codePointLabel, findFullWidth } from "./fullwidth";
import { t } from "./i18n";
import { monaco } from "./monaco";

type Position = { lineNumber: number; column: number };
type Token = { isCancellationRequested: boolean; onCancellationRequested(listener: () => void): unknown };

interface Item {
  label: string;
  kind: string;
  insert: string;
  signature?: string;
  doc?: string;
  full_name?: string;
}
interface Signature {
  label: string;
  params: { label: string; name: string }[];
  index: number | null;
  doc: string;
}
interface Hover {
  name?: string;
  full_name?: string;
  signature?: string;
  doc?: string;
  docs_url?: string | null;
}
export interface Problem {
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  code: string;
  message: string;
  severity: "error" | "warning";
  unnecessary: boolean;
}

const LINT_OWNER = "problems";
const FULL_WIDTH_OWNER = "fullwidth";
const LINT_PAUSE_MS = 500;
let seq = 0;
/** The runtime the page's runs use: its analysers answer, for its JAX (null: the default). */
let runtime: string | null = null;
export function setAnalysisRuntime(id: string | null): void {
  runtime = id;
}
/** This page's editors: the analyser supersedes a request only by a newer one of the same page. */
const EDITOR = Math.random().toString(36).slice(2, 12);

async function post<T>(path: string, body: object, signal?: AbortSignal): Promise<T | null> {
  const headers: Record<string, string> = { Accept: "application/json", "Content-Type": "application/json" };
  const token = csrfToken();
  if (token) headers["X-CSRFToken"] = token;
  try {
    const response = await fetch(path, {
      method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin", signal,
    });
    if (!response.ok) return null; // no suggestions: typing goes on as ever
    return (await response.json()) as T;
  } catch {
    return null;
  }
}

// Code that comes before an editor's own for its analysis: a notebook cell's are the code cells
// above it, so that completion, signatures and hover know the names they define.
const contexts = new WeakMap<monaco.editor.ITextModel, () => string>();
// What the analysis is sent at most; the context's oldest lines go first.
const CONTEXT_MAX_CHARS = 48_000;

/** ``before()``: the code that runs before this model's, whole lines (ending with a newline). */
export function setAnalysisContext(model: monaco.editor.ITextModel, before: () => string): void {
  contexts.set(model, before);
}

function withContext(model: monaco.editor.ITextModel): { code: string; offset: number } {
  let before = contexts.get(model)?.() ?? "";
  if (before.length > CONTEXT_MAX_CHARS) {
    before = before.slice(before.length - CONTEXT_MAX_CHARS);
    before = before.slice(before.indexOf("\n") + 1); // from a whole line
  }
  if (before && !before.endsWith("\n")) before += "\n";
  return { code: before + model.getValue(), offset: before ? before.split("\n").length - 1 : 0 };
}

/** Whether an input method is composing text in this model's editor. */
const composing = new WeakSet<monaco.editor.ITextModel>();
/** What waits for the composition in progress to end, each once. */
const afterComposing = new WeakMap<monaco.editor.ITextModel, Set<() => void>>();

/** Runs ``run`` now, or once when the composition in progress ends (however often asked meanwhile). */
export function whenComposed(model: monaco.editor.ITextModel, run: () => void): void {
  if (!composing.has(model)) {
    run();
    return;
  }
  let waiting = afterComposing.get(model);
  if (!waiting) afterComposing.set(model, (waiting = new Set()));
  waiting.add(run);
}

/** Follows the editor's compositions (editor.ts calls this for every editor). */
export function watchComposition(editor: monaco.editor.IStandaloneCodeEditor): void {
  editor.onDidCompositionStart(() => {
    const model = editor.getModel();
    if (!model) return;
    composing.add(model);
    // A list opened before the composition would take its Enter or filter on its pinyin.
    editor.trigger("composition", "hideSuggestWidget", null);
  });
  editor.onDidCompositionEnd(() => {
    const model = editor.getModel();
    if (!model || !composing.delete(model)) return;
    const waiting = afterComposing.get(model);
    afterComposing.delete(model);
    for (const run of waiting ?? []) run();
  });
}

async function analyse<T>(op: string, model: monaco.editor.ITextModel, position: Position, token: Token,
  extra: object = {}): Promise<T | null> {
  if (composing.has(model)) return null;
  const controller = new AbortController();
  token.onCancellationRequested(() => controller.abort());
  const { code, offset } = withContext(model);
  const answer = await post<T & { superseded?: boolean; error?: string }>("/api/analyse", {
    op, code, line: position.lineNumber + offset, column: position.column, seq: ++seq, editor: EDITOR,
    ...(runtime ? { runtime } : {}),
    ...extra,
  }, controller.signal);
  // An answer that comes back during a composition is not shown either: it was for other text.
  if (!answer || answer.superseded || answer.error || token.isCancellationRequested || composing.has(model)) return null;
  return answer;
}

const KINDS: Record<string, monaco.languages.CompletionItemKind> = {
  module: monaco.languages.CompletionItemKind.Module,
  class: monaco.languages.CompletionItemKind.Class,
  instance: monaco.languages.CompletionItemKind.Variable,
  function: monaco.languages.CompletionItemKind.Function,
  param: monaco.languages.CompletionItemKind.Variable,
  path: monaco.languages.CompletionItemKind.File,
  keyword: monaco.languages.CompletionItemKind.Keyword,
  property: monaco.languages.CompletionItemKind.Property,
  statement: monaco.languages.CompletionItemKind.Variable,
};

/** A docstring as Markdown: the signature as Python, the doc as written, the API page linked. */
export function docMarkdown(h: Hover): string {
  const parts: string[] = [];
  if (h.signature) parts.push("```python\n" + h.signature + "\n```");
  if (h.doc) parts.push(restToMarkdown(h.doc));
  if (h.docs_url) parts.push(`[${t("{name} on docs.jax.dev", { name: publicName(h) })}](${h.docs_url})`);
  return parts.join("\n\n");
}

/** A docstring's reST as Markdown, as far as a hover needs: ``code`` and :func:`name` become
 * code spans, everything else is text (escaped, so that nothing in it is taken for markup). */
export function restToMarkdown(doc: string): string {
  const spans: string[] = [];
  const marked = doc
    .replace(/:[\w:.-]+:`~?([^`]+)`/g, (_m, name: string) => `\u0000${spans.push(name) - 1}\u0000`)
    .replace(/``([^`]+)``/g, (_m, code: string) => `\u0000${spans.push(code) - 1}\u0000`);
  return marked
    .replace(/([*_`<>[\]\\#|])/g, "\\$1")
    .replace(/\u0000(\d+)\u0000/g, (_m, i: string) => "`" + spans[Number(i)].replace(/`/g, "") + "`");
}

function publicName(h: Hover): string {
  const match = /_autosummary\/(.+)\.html$/.exec(h.docs_url ?? "");
  return match ? match[1] : h.full_name ?? h.name ?? "";
}

/** What a top-level name held when the last run ended (the runner's "shapes" event). */
export interface Shape {
  type: string;
  line?: number;
  sharding?: string;
}
const runShapes = new WeakMap<monaco.editor.ITextModel, { code: string; names: Record<string, Shape> }>();

/** The last run's shapes for this editor's model, with the code that run ran; null forgets them. */
export function setRunShapes(model: monaco.editor.ITextModel, code: string, names: Record<string, Shape> | null): void {
  if (names) runShapes.set(model, { code, names });
  else runShapes.delete(model);
}

/** "`y: f32[1000,1000]`, after the last run (line 3)", said stale when the code up to the line
 *  that assigned it is no longer what ran. */
export function shapeMarkdown(model: monaco.editor.ITextModel, name: string): string | null {
  const shapes = runShapes.get(model);
  const entry = shapes && Object.prototype.hasOwnProperty.call(shapes.names, name) ? shapes.names[name] : null;
  if (!shapes || !entry || typeof entry.type !== "string") return null;
  const upTo = (text: string) => (entry.line ? text.split("\n").slice(0, entry.line).join("\n") : text);
  const stale = upTo(model.getValue()) !== upTo(shapes.code);
  const sharding = entry.sharding ? "\n\n" + t("Sharded: `{sharding}`", { sharding: entry.sharding.replace(/`/g, "") }) : "";
  return "`" + `${name}: ${entry.type}`.replace(/`/g, "") + "`" + sharding + "\n\n" + whenItRan(entry.line, stale);
}

function whenItRan(line: number | undefined, stale: boolean): string {
  if (line && stale) {
    return t("When the last run ended, assigned on line {line}. *The code up to there has changed since: it may hold something else now.*", { line });
  }
  if (line) return t("When the last run ended, assigned on line {line}.", { line });
  if (stale) return t("When the last run ended. *The code up to there has changed since: it may hold something else now.*");
  return t("When the last run ended.");
}

type PlaygroundItem = monaco.languages.CompletionItem & { at?: { model: monaco.editor.ITextModel; position: Position } };

let registered = false;

export function registerPythonIntellisense(): void {
  if (registered) return;
  registered = true;
  registerFullWidthFixes();
  monaco.languages.registerCompletionItemProvider("python", {
    triggerCharacters: ["."],
    async provideCompletionItems(model, position, _context, token) {
      const answer = await analyse<{ items: Item[] }>("complete", model, position, token);
      // No answer (none in time, superseded): incomplete, so the next keystroke asks again
      // instead of filtering an empty list.
      if (!answer) return { suggestions: [], incomplete: true };
      const word = model.getWordUntilPosition(position);
      const range = new monaco.Range(position.lineNumber, word.startColumn, position.lineNumber, position.column);
      // A row shows the name and, once known, its parameters ("einsum(subscript: str, ...)"),
      // and nothing else: what a screen reader's name for the row says is then what it shows.
      // The whole signature and the first lines of the doc are in the details (Ctrl+Space).
      const suggestions: PlaygroundItem[] = answer.items.map((item, i) => ({
        label: { label: item.label, detail: parameters(item.label, item.signature) },
        kind: KINDS[item.kind] ?? monaco.languages.CompletionItemKind.Text,
        insertText: item.label,
        range,
        sortText: String(i).padStart(4, "0"),
        documentation: item.signature || item.doc
          ? { value: docMarkdown({ signature: item.signature, doc: item.doc }) } : undefined,
        at: item.signature === undefined ? { model, position } : undefined,
      }));
      return { suggestions };
    },
    async resolveCompletionItem(item: PlaygroundItem, token) {
      if (!item.at) return item;
      const details = await analyse<Hover>("resolve", item.at.model, item.at.position, token,
        { label: typeof item.label === "string" ? item.label : item.label.label });
      if (details && typeof item.label !== "string") {
        item.label.detail = parameters(item.label.label, details.signature);
        if (details.signature || details.doc) {
          item.documentation = { value: docMarkdown({ signature: details.signature, doc: details.doc }) };
        }
      }
      return item;
    },
  });
  monaco.languages.registerSignatureHelpProvider("python", {
    signatureHelpTriggerCharacters: ["(", ","],
    signatureHelpRetriggerCharacters: [")"],
    async provideSignatureHelp(model, position, token, context) {
      // A composition's edits ask again: the signatures shown stay as they are meanwhile.
      if (composing.has(model)) return context.activeSignatureHelp ? { value: context.activeSignatureHelp, dispose() {} } : null;
      const answer = await analyse<{ signatures: Signature[] }>("signatures", model, position, token);
      if (!answer || !answer.signatures.length) return null;
      const first = answer.signatures[0];
      return {
        value: {
          signatures: answer.signatures.map((s) => ({
            label: s.label,
            documentation: s.doc ? { value: docMarkdown({ doc: s.doc }) } : undefined,
            parameters: parameterRanges(s),
          })),
          activeSignature: 0,
          activeParameter: first.index ?? 0,
        },
        dispose() {},
      };
    },
  });
  monaco.languages.registerHoverProvider("python", {
    async provideHover(model, position, token) {
      const word = model.getWordAtPosition(position);
      if (!word) return null;
      // On a full-width character (`print（`: the word ends where it starts) its diagnosis is
      // the whole story: the docs of the name before it are another subject.
      if (fullWidthAt(model, position)) return null;
      const contents: monaco.IMarkdownString[] = [];
      const shape = shapeMarkdown(model, word.word);
      if (shape) contents.push({ value: shape });
      const answer = await analyse<Hover>("hover", model, position, token);
      if (answer && (answer.doc || answer.signature)) contents.push({ value: docMarkdown(answer) });
      if (!contents.length) return null;
      return {
        range: new monaco.Range(position.lineNumber, word.startColumn, position.lineNumber, word.endColumn),
        contents,
      };
    },
  });
}

/** A callable's parameters from its signature, on one line and short enough for a row. */
function parameters(name: string, signature: string | undefined): string | undefined {
  const flat = (signature ?? "").replace(/\s+/g, " ").trim();
  if (!flat.startsWith(name + "(")) return undefined;
  const rest = flat.slice(name.length);
  return rest.length > 70 ? rest.slice(0, 69) + "…" : rest;
}

/** Each parameter as its place in the signature's label, so that Monaco can highlight it. */
function parameterRanges(s: Signature): monaco.languages.ParameterInformation[] {
  let from = s.label.indexOf("(") + 1;
  return s.params.map((p) => {
    const at = s.label.indexOf(p.name, from);
    if (at < 0) return { label: p.label };
    from = at + p.name.length;
    return { label: [at, at + p.name.length] as [number, number] };
  });
}

/** Markers for the code's problems, within about a second of a pause in typing: ruff's, and each
 *  full-width character in code. A syntax error that ruff finds on a line holding one is that
 *  character's doing: its marker says so better, and the rest comes back once it is fixed. */
export function watchProblems(editor: monaco.editor.IStandaloneCodeEditor): { refresh(): void } {
  const model = editor.getModel()!;
  let timer: number | undefined;
  let controller: AbortController | null = null;
  const check = async () => {
    controller?.abort();
    controller = null;
    if (model.isDisposed()) return;
    if (composing.has(model)) {
      whenComposed(model, later);
      return;
    }
    const fullWidth = markFullWidth(model);
    controller = new AbortController();
    const version = model.getVersionId();
    const answer = await post<{ problems: Problem[] }>("/api/lint", { code: model.getValue() }, controller.signal);
    if (!answer || model.isDisposed() || model.getVersionId() !== version) return;
    if (composing.has(model)) {
      whenComposed(model, later);
      return;
    }
    monaco.editor.setModelMarkers(model, LINT_OWNER, answer.problems
      .filter((p) => !(p.code === "syntax" && fullWidth.has(p.line)))
      .map((p) => ({
        startLineNumber: p.line,
        startColumn: p.column,
        endLineNumber: p.end_line,
        endColumn: Math.max(p.end_column, p.column + 1),
        message: p.message,
        code: p.code,
        source: p.code.startsWith("F") || p.code === "syntax" ? "ruff" : "playground",
        severity: p.severity === "error" ? monaco.MarkerSeverity.Error : monaco.MarkerSeverity.Warning,
        tags: p.unnecessary ? [monaco.MarkerTag.Unnecessary] : [],
      })));
  };
  const later = () => {
    window.clearTimeout(timer);
    // Nothing is checked while an input method composes: once, when it is done.
    if (composing.has(model)) whenComposed(model, later);
    else timer = window.setTimeout(() => void check(), LINT_PAUSE_MS);
  };
  model.onDidChangeContent(later);
  model.onDidChangeLanguage(later);
  later();
  return { refresh: later };
}

/** Whether a full-width character is marked at `position` (a word's hover reaches the character
 *  just after it: `print（` hovered on its `（` finds the word `print`). */
function fullWidthAt(model: monaco.editor.ITextModel, position: monaco.Position): boolean {
  return monaco.editor.getModelMarkers({ resource: model.uri, owner: FULL_WIDTH_OWNER }).some((m) =>
    m.startLineNumber === position.lineNumber
    && position.column >= m.startColumn && position.column <= m.endColumn);
}

/** Marks each full-width character in the model's code (Python's only): the lines that hold one. */
function markFullWidth(model: monaco.editor.ITextModel): Set<number> {
  const found = model.getLanguageId() === "python" ? findFullWidth(model.getValue()) : [];
  monaco.editor.setModelMarkers(model, FULL_WIDTH_OWNER, found.map((f) => ({
    startLineNumber: f.line,
    startColumn: f.column,
    endLineNumber: f.line,
    endColumn: f.column + f.char.length,
    message: t("Full-width '{char}' ({code}): Python needs '{ascii}'", {
      char: f.char, code: codePointLabel(f.codePoint), ascii: f.ascii,
    }),
    severity: monaco.MarkerSeverity.Error,
  })));
  return new Set(found.map((f) => f.line));
}

/** Each full-width character of `chars` made ASCII: one edit per character, for a code action or
 *  for `executeEdits`. */
function halfWidthEdits(chars: ReturnType<typeof findFullWidth>) {
  return chars.map((f) => ({
    range: new monaco.Range(f.line, f.column, f.line, f.column + f.char.length), text: f.ascii,
  }));
}

/** The quick fix that an error's explanation speaks of ("use the editor's quick fix to replace
 *  them all"), as the error card's button applies it: the same edit as the light bulb's "Replace
 *  full-width punctuation with half-width", one undo step. Null when the code in the editor has
 *  nothing it would change (fixed already, or an error of another kind). */
export function quickFixFor(editor: monaco.editor.IStandaloneCodeEditor,
                            template: unknown): { label: string; title: string; apply(): number } | null {
  const model = editor.getModel();
  if (!model || editor.getOption(monaco.editor.EditorOption.readOnly)) return null;
  if (typeof template !== "string" || !template.includes("full-width")) return null;
  if (!findFullWidth(model.getValue()).length) return null;
  return {
    label: t("Replace all with half-width"),
    title: t("Replace full-width punctuation with half-width"),
    apply() {
      const found = findFullWidth(model.getValue());
      editor.pushUndoStop();
      editor.executeEdits("full-width", halfWidthEdits(found));
      editor.pushUndoStop();
      markFullWidth(model);
      return found.length;
    },
  };
}

/** Quick fixes at a full-width character: that one made ASCII, or every one in the code, each
 *  as one edit (one undo). Offered from the light bulb, Ctrl+., the marker's hover and the error
 *  card's button (``quickFixFor``). */
function registerFullWidthFixes(): void {
  monaco.languages.registerCodeActionProvider("python", {
    provideCodeActions(model, range, context) {
      // Where they are marked: an editor that shows no problems (a read-only one) offers no fix.
      if (!monaco.editor.getModelMarkers({ resource: model.uri, owner: FULL_WIDTH_OWNER }).length) {
        return { actions: [], dispose() {} };
      }
      const found = findFullWidth(model.getValue());
      const here = found.filter((f) => f.line >= range.startLineNumber && f.line <= range.endLineNumber
        && (f.line > range.startLineNumber || f.column + 1 >= range.startColumn)
        && (f.line < range.endLineNumber || f.column <= range.endColumn));
      if (!here.length) return { actions: [], dispose() {} };
      const markers = context.markers.filter((m) => found.some((f) => f.line === m.startLineNumber && f.column === m.startColumn));
      const edit = (chars: typeof found): monaco.languages.WorkspaceEdit => ({
        edits: halfWidthEdits(chars).map((textEdit) => ({
          resource: model.uri, versionId: model.getVersionId(), textEdit,
        })),
      });
      const actions: monaco.languages.CodeAction[] = here.map((f) => ({
        title: t("Replace '{char}' with '{ascii}'", { char: f.char, ascii: f.ascii }),
        kind: "quickfix",
        diagnostics: markers.filter((m) => m.startLineNumber === f.line && m.startColumn === f.column),
        edit: edit([f]),
      }));
      actions.push({
        title: t("Replace full-width punctuation with half-width"),
        kind: "quickfix",
        diagnostics: markers,
        edit: edit(found),
        isPreferred: true,
      });
      return { actions, dispose() {} };
    },
  }, { providedCodeActionKinds: ["quickfix"] });
}
