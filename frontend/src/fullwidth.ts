// Full-width punctuation in Python code: what a Chinese input method types in place of ASCII
// ("print（1）", "x：int", "f（a，b）"), which Python rejects. Only code counts: text inside a
// string or a comment is the person's own words, Chinese punctuation and all, and is never
// marked or changed. No Monaco here, so that it can be tested on its own.
//
// What is code, as Python's tokenizer sees it:
// - a string: "…", '…', """…""", '''…''', with any prefix (r, b, u, f, t and their pairs); a
//   backslash escapes the next character, a raw string's included (r"\"" is one string); a
//   single-quoted string that is not closed ends with its line, as the tokenizer gives up there;
// - an f-string's (or t-string's) replacement fields, {…} but not {{ or }}, are code again, up to
//   the field's format spec (after a ":" or "!" outside brackets), whose own {…} are code too;
// - a comment: "#" to the end of the line.
//
// A full-width quote in code opens a string itself: “你好” is a string typed with the wrong
// quotes, not code. Its opening quote is marked (and becomes ASCII), what follows is the
// string's text up to the first quote of either width that closes it (“ ” or " for a double
// quote, ‘ ’ or ' for a single one) on the same line; that closing quote is marked too when it
// is full-width. A full-width "＃" likewise starts a comment after it.

/** Each full-width character Python needs in ASCII, and that ASCII. */
const HALF_WIDTH: Record<string, string> = {
  "\u3000": " ", // ideographic space
  "。": ".",
  "【": "[",
  "】": "]",
  "《": "<",
  "》": ">",
  "“": '"',
  "”": '"',
  "‘": "'",
  "’": "'",
};
// The full-width forms of ASCII's punctuation, U+FF01 (！) to U+FF5E (～), all but "＿": Python
// takes that one for "_" in a name (names are NFKC-normalised), and letters and digits likewise.
for (let code = 0xff01; code <= 0xff5e; code++) {
  const ascii = String.fromCharCode(code - 0xfee0);
  if (/[!-/:-@[-^`{-~]/.test(ascii)) HALF_WIDTH[String.fromCharCode(code)] = ascii;
}

const DOUBLE_QUOTES = new Set(["“", "”", "＂"]);
const SINGLE_QUOTES = new Set(["‘", "’", "＇"]);

export interface FullWidth {
  /** Where it is in the code (UTF-16 units, as a JavaScript string counts). */
  index: number;
  /** 1-based, as an editor counts. */
  line: number;
  column: number;
  char: string;
  codePoint: number;
  /** What Python needs in its place. */
  ascii: string;
}

/** The ASCII a full-width character stands for, or undefined. */
export function halfWidth(char: string): string | undefined {
  return Object.prototype.hasOwnProperty.call(HALF_WIDTH, char) ? HALF_WIDTH[char] : undefined;
}

/** "U+FF08". */
export function codePointLabel(codePoint: number): string {
  return "U+" + codePoint.toString(16).toUpperCase().padStart(4, "0");
}

/** Every full-width character in the code outside its strings and comments, in order. */
export function findFullWidth(code: string): FullWidth[] {
  const found: FullWidth[] = [];
  let line = 1;
  let lineStart = 0;
  let at = 0;
  for (const index of scan(code)) {
    for (; at < index; at++) {
      const c = code[at];
      if (c === "\n" || (c === "\r" && code[at + 1] !== "\n")) {
        line += 1;
        lineStart = at + 1;
      }
    }
    const char = code[index];
    found.push({ index, line, column: index - lineStart + 1, char, codePoint: char.charCodeAt(0), ascii: HALF_WIDTH[char] });
  }
  return found;
}

/** The code with each of those characters replaced by its ASCII; strings and comments as they were. */
export function replaceFullWidth(code: string): string {
  const indexes = scan(code);
  if (!indexes.length) return code;
  const chars = code.split("");
  for (const index of indexes) chars[index] = HALF_WIDTH[chars[index]];
  return chars.join("");
}

const isNewline = (c: string) => c === "\n" || c === "\r";

/** The indexes of the full-width characters in code, in order. */
function scan(code: string): number[] {
  const found: number[] = [];
  const n = code.length;
  let i = 0;

  const toLineEnd = () => {
    while (i < n && !isNewline(code[i])) i++;
  };

  /** Code from i: to the end, or, in an f-string's replacement field, past the field's "}". */
  const codeFrom = (field: { quote: string; triple: boolean } | null): void => {
    let depth = 0;
    while (i < n) {
      const c = code[i];
      if (field) {
        // A single-quoted f-string ends with its line, and so does any field left open in it.
        if (isNewline(c) && !field.triple) return;
        if (c === "(" || c === "[" || c === "{") depth++;
        else if ((c === ")" || c === "]") && depth > 0) depth--;
        else if (c === "}") {
          if (depth === 0) {
            i++;
            return;
          }
          depth--;
        } else if (depth === 0 && (c === ":" || (c === "!" && code[i + 1] !== "="))) {
          formatSpec(field);
          return;
        }
      }
      if (c === "#") toLineEnd();
      else if (c === '"' || c === "'") string();
      else if (c === "＃") {
        found.push(i);
        toLineEnd();
      } else if (DOUBLE_QUOTES.has(c) || SINGLE_QUOTES.has(c)) fullWidthString();
      else {
        if (halfWidth(c) !== undefined) found.push(i);
        i++;
      }
    }
  };

  /** A replacement field's format spec (or conversion), from its ":" or "!" past its "}". */
  const formatSpec = (field: { quote: string; triple: boolean }): void => {
    while (i < n) {
      const c = code[i];
      if (c === "}") {
        i++;
        return;
      }
      if ((isNewline(c) && !field.triple) || code.startsWith(field.triple ? field.quote.repeat(3) : field.quote, i)) return;
      i++;
      if (c === "{") codeFrom(field);
    }
  };

  /** A string from its opening quote (i) past its closing one. */
  const string = (): void => {
    const quote = code[i];
    let start = i;
    while (start > 0 && /[A-Za-z]/.test(code[start - 1])) start--;
    const prefix = code.slice(start, i);
    const formatted = prefix.length <= 2 && /^[rbuft]*$/i.test(prefix) && /[ft]/i.test(prefix);
    const triple = code.startsWith(quote.repeat(3), i);
    const close = triple ? quote.repeat(3) : quote;
    i += close.length;
    while (i < n) {
      const c = code[i];
      if (code.startsWith(close, i)) {
        i += close.length;
        return;
      }
      if (isNewline(c) && !triple) return;
      if (c === "\\" && !(formatted && code[i + 1] === "{")) i += 2;
      else if (formatted && c === "{") {
        if (code[i + 1] === "{") i += 2;
        else {
          i++;
          codeFrom({ quote, triple });
        }
      } else i++;
    }
  };

  /** “…” (or ‘…’) in code: a string typed with full-width quotes; its quotes are marked. */
  const fullWidthString = (): void => {
    const double = DOUBLE_QUOTES.has(code[i]);
    const closers = double ? DOUBLE_QUOTES : SINGLE_QUOTES;
    const ascii = double ? '"' : "'";
    found.push(i);
    i++;
    while (i < n && !isNewline(code[i])) {
      const c = code[i];
      if (c === "\\") i += 2;
      else if (c === ascii) {
        i++;
        return;
      } else if (closers.has(c)) {
        found.push(i);
        i++;
        return;
      } else i++;
    }
  };

  codeFrom(null);
  return found;
}
