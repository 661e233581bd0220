// Syntax highlighting for what JAX shows of a function: its jaxpr, and the StableHLO (MLIR) and
// optimised HLO that XLA makes of it. Two small Monarch tokenizers (Monarch ships with the
// editor already, so they cost a few hundred bytes) and the two themes of the page, which add
// colours for their tokens to Monaco's own light and dark themes.
import { monaco } from "./monaco";

/** Element types, as jaxprs spell them: f32[4,4], bf16[], i32[b,8], key<fry>[]. */
const JAXPR_DTYPES =
  "(?:bf16|f8_\\w+|f16|f32|f64|i4|i8|i16|i32|i64|u4|u8|u16|u32|u64|c64|c128|bool|float0|key<\\w+>)";

const jaxpr: monaco.languages.IMonarchLanguage = {
  defaultToken: "",
  tokenPostfix: ".jaxpr",
  brackets: [
    { open: "{", close: "}", token: "delimiter.curly" },
    { open: "[", close: "]", token: "delimiter.square" },
    { open: "(", close: ")", token: "delimiter.parenthesis" },
  ],
  tokenizer: {
    root: [
      // Source information: "# <snippet>:4:21 (predict)" and name stacks "# [jvp()]".
      [/#.*$/, "comment"],
      [/\b(?:lambda|let|in)\b/, "keyword.flow"],
      [new RegExp(`\\b${JAXPR_DTYPES}\\[[^\\]]*\\]`), "type"],
      // The primitive of an equation: "c:f32[] = add a b".
      [/(=)(\s+)([a-zA-Z_][\w]*)/, ["delimiter", "", "keyword"]],
      // A parameter: "dimension_numbers=(...)".
      [/[a-zA-Z_]\w*(?==)/, "attribute.name"],
      [/'[^']*'|"[^"]*"/, "string"],
      [/-?\d+\.\d*(?:e[+-]?\d+)?|-?\d+e[+-]?\d+|-?\d+/, "number"],
      [/\b(?:True|False|None|inf|nan)\b/, "number"],
      [/[a-zA-Z_]\w*/, "variable"],
      [/[{}()[\]]/, "@brackets"],
      [/[:;.,=*]/, "delimiter"],
    ],
  },
};

/** HLO element types: f32[4000,4000]{1,0} (shape with layout), pred[], token[]. */
const HLO_TYPES =
  "(?:pred|bf16|f8\\w*|f16|f32|f64|s4|s8|s16|s32|s64|u4|u8|u16|u32|u64|c64|c128|token|tuple)";

/** Optimised HLO text and StableHLO (MLIR) share one tokenizer: their token kinds line up. */
const hlo: monaco.languages.IMonarchLanguage = {
  defaultToken: "",
  tokenPostfix: ".hlo",
  brackets: [
    { open: "{", close: "}", token: "delimiter.curly" },
    { open: "[", close: "]", token: "delimiter.square" },
    { open: "(", close: ")", token: "delimiter.parenthesis" },
    { open: "<", close: ">", token: "delimiter.angle" },
  ],
  tokenizer: {
    root: [
      [/\/\/.*$/, "comment"],
      [/\/\*/, "comment", "@blockComment"],
      // MLIR debug locations: "#loc3 = loc(...)" lines and trailing "loc(#loc3)".
      [/^#loc.*$/, "comment"],
      [/\bloc\([^)]*\)/, "comment"],
      // The name an instruction defines, at the start of its line (ROOT marks the result).
      [/^(\s*)(ROOT)(\s+)([%\w.\-]+)(?=\s*=)/, ["", "keyword.flow", "", "variable.name"]],
      [/^(\s*)(%?[\w.\-]+)(?=\s*=\s)/, ["", "variable.name"]],
      [/\b(?:HloModule|ENTRY|ROOT|module|attributes|return|public|private)\b/, "keyword.flow"],
      [/^(?:FileNames|FunctionNames|FileLocations|StackFrames)$/, "keyword.flow"],
      [new RegExp(`\\b${HLO_TYPES}\\[[^\\]]*\\](?:\\{[^}]*\\})?`), "type"],
      [/\b(?:tensor|memref|vector|tuple)<[^>]*>/, "type"],
      [/\b(?:[iuf]\d+|bf16|index)\b/, "type"],
      [/%[\w.\-#]+/, "variable"],
      [/@[\w.\-$]+/, "variable.predefined"],
      [/"/, "string", "@string"],
      // Dialect operations: stablehlo.add, func.func, sdy.sharding.
      [/\b[a-z_]+\.[a-z_][\w.]*(?=[\s(<{:]|$)/, "keyword"],
      // Attributes: dimensions={1}, metadata={...}, mhlo.num_partitions = 1.
      [/[a-zA-Z_][\w.]*(?=\s*=)/, "attribute.name"],
      // HLO opcodes: multiply(%a, %b), parameter(0), fusion(...).
      [/[a-z][\w\-]*(?=\()/, "keyword"],
      [/\bdense(?=<)/, "keyword"],
      [/-?\d+\.\d*(?:e[+-]?\d+)?|-?\d+e[+-]?\d+|0x[0-9a-fA-F]+|-?\d+/, "number"],
      [/\b(?:true|false)\b/, "number"],
      [/[a-zA-Z_][\w\-]*/, "identifier"],
      [/[{}()[\]<>]/, "@brackets"],
      [/->|[:;.,=*]/, "delimiter"],
    ],
    blockComment: [
      [/[^*]+/, "comment"],
      [/\*\//, "comment", "@pop"],
      [/\*/, "comment"],
    ],
    string: [
      [/[^\\"]+/, "string"],
      [/\\./, "string.escape"],
      [/"/, "string", "@pop"],
    ],
  },
};

const COMMENT_CONF: monaco.languages.LanguageConfiguration = {
  brackets: [
    ["{", "}"],
    ["[", "]"],
    ["(", ")"],
  ],
};

let registered = false;

/** Registers "jaxpr" and "hlo" and the page's two themes; safe to call more than once. */
export function registerLanguages(): void {
  if (registered) return;
  registered = true;
  monaco.languages.register({ id: "jaxpr", aliases: ["jaxpr"] });
  monaco.languages.setMonarchTokensProvider("jaxpr", jaxpr);
  monaco.languages.setLanguageConfiguration("jaxpr", {
    ...COMMENT_CONF,
    comments: { lineComment: "#" },
  });
  monaco.languages.register({ id: "hlo", aliases: ["HLO", "StableHLO"] });
  monaco.languages.setMonarchTokensProvider("hlo", hlo);
  monaco.languages.setLanguageConfiguration("hlo", {
    ...COMMENT_CONF,
    comments: { lineComment: "//", blockComment: ["/*", "*/"] },
  });

  // Monaco's vs / vs-dark colour "attribute.name" bright red and every variable the same as a
  // keyword; in a jaxpr nearly every word is a variable, so those are toned down here.
  // Each token: its light-theme colour, its dark-theme colour, a font style.
  const palette: [string, string, string, string?][] = [
    ["keyword.jaxpr", "0b57d0", "7cacf8", "bold"],
    ["keyword.hlo", "0b57d0", "7cacf8"],
    ["keyword.flow", "8e24aa", "d69ae6"],
    ["type.jaxpr", "0a6670", "4ec9b0"],
    ["type.hlo", "0a6670", "4ec9b0"],
    ["variable.jaxpr", "1f2328", "d4d4d4"],
    ["variable.hlo", "795e26", "dcdcaa"],
    ["variable.name.hlo", "795e26", "dcdcaa", "bold"],
    ["variable.predefined.hlo", "8f4f00", "e5a66b"],
    ["attribute.name", "5a5e66", "9aa1ab"],
    ["identifier.hlo", "3b4048", "c8ccd2"],
    ["comment", "5a6169", "8c939c", "italic"],
    ["number", "07704a", "b5cea8"],
  ];
  for (const [name, base, isDark] of [["playground-light", "vs", false], ["playground-dark", "vs-dark", true]] as const) {
    monaco.editor.defineTheme(name, {
      base,
      inherit: true,
      rules: palette.map(([token, light, dark, fontStyle]) => ({
        token,
        foreground: isDark ? dark : light,
        ...(fontStyle ? { fontStyle } : {}),
      })),
      // Every colour above is at 4.5:1 or more (WCAG AA) against the editor and against the
      // diff's backgrounds below, in both themes (Monaco's own dark ones put a comment at 2.9:1
      // on an inserted line); so are the line numbers (Monaco's own dim the last line's to
      // about 1.8:1).
      colors: isDark
        ? {
            "editorLineNumber.foreground": "#858585",
            "editorLineNumber.dimmedForeground": "#858585",
            "diffEditor.insertedTextBackground": "#1e301e",
            "diffEditor.removedTextBackground": "#381e1e",
            "diffEditor.insertedLineBackground": "#1c261c",
            "diffEditor.removedLineBackground": "#2a1c1c",
          }
        : {
            "editorLineNumber.foreground": "#237893",
            "editorLineNumber.dimmedForeground": "#6e7781",
            "diffEditor.insertedTextBackground": "#ccf2d4",
            "diffEditor.removedTextBackground": "#ffd7d5",
            "diffEditor.insertedLineBackground": "#eafbee",
            "diffEditor.removedLineBackground": "#fff1f0",
          },
    });
  }
}

export function themeName(theme: "light" | "dark"): string {
  registerLanguages();
  return theme === "dark" ? "playground-dark" : "playground-light";
}
