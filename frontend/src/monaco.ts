// Monaco, trimmed to what the playground uses: the Python editor and the read-only views of
// compiled code (plain and diff).
//
// Since monaco-editor 0.56 the package's "exports" map sends `monaco-editor/<x>` to
// `esm/vs/<x>.js`. `monaco-editor` itself would pull in every language and feature (several MB);
// we import the bare editor API, the features we want and the Python tokenizer only.
import * as monaco from "monaco-editor/editor";

import "monaco-editor/features/codicon/register";
import "monaco-editor/features/bracketMatching/register";
import "monaco-editor/features/clipboard/register";
// Quick fixes (the light bulb, Ctrl+., a marker's hover): full-width punctuation (intellisense.ts).
import "monaco-editor/features/codeAction/register";
import "monaco-editor/features/comment/register";
import "monaco-editor/features/contextmenu/register";
import "monaco-editor/features/cursorUndo/register";
import "monaco-editor/features/find/register";
import "monaco-editor/features/folding/register";
// Shift+Alt+F formats the code (the provider, ruff on the server, is in editor.ts).
import "monaco-editor/features/format/register";
import "monaco-editor/features/gotoError/register";
import "monaco-editor/features/hover/register";
import "monaco-editor/features/indentation/register";
import "monaco-editor/features/linesOperations/register";
import "monaco-editor/features/multicursor/register";
// Signature help inside a call (the provider, the analyser on the server, is in intellisense.ts).
import "monaco-editor/features/parameterHints/register";
// "features/suggest/register" brings only the inline completions; the suggestion widget (the
// list that completion opens) is its controller's, imported itself.
import "monaco-editor/features/suggest/register";
import "monaco-editor/editor/contrib/suggest/browser/suggestController";
import "monaco-editor/features/snippet/register";
// Ctrl+M (Ctrl+Shift+M on a Mac): Tab moves focus instead of indenting, as in VS Code.
import "monaco-editor/features/toggleTabFocusMode/register";
import "monaco-editor/features/wordHighlighter/register";
import "monaco-editor/features/wordOperations/register";
import "monaco-editor/languages/definitions/python/register";

export { monaco };

// Chinese in strings and comments comes from a CJK font after the monospace ones (as in
// styles/base.css's --font-mono): the code's own letters keep their fixed width.
export const MONO_FONT =
  'ui-monospace, "SF Mono", "Cascadia Code", "JetBrains Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace, '
  + '"PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC"';
