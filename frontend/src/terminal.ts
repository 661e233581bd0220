// The Output tab's text as a terminal keeps it: lines of styled segments. A carriage return
// goes back to the line's start and what follows replaces the line (progress bars), as Jupyter
// and Colab show it (a terminal would keep the old line's tail where the new one is shorter);
// ESC[K erases to the line's end; colours and styles (SGR) are interpreted by ansi_up, a maintained library, when a
// line is drawn. Other escape sequences (cursor movement) are dropped rather than shown as
// boxes.
//
// Drawing is virtualised: only the lines in view (and a margin) are in the DOM once the output
// is long, each line is cut to a readable length with a way to see the rest, and changes are
// drawn once per frame, so a flood of prints or a line of a megabyte keeps the page responsive.
import { AnsiUp } from "ansi_up";
import { formatNumber, t } from "./i18n";

export type Stream = "stdout" | "stderr" | "value" | "value-label";

interface Segment {
  text: string;
  /** The SGR sequences in force (concatenated since the last reset). */
  sgr: string;
  stream: Stream;
}

class Line {
  segments: Segment[] = [];
  length = 0;
  /** Drawn in full, though longer than a line is cut to. */
  expanded = false;

  text(): string {
    return this.segments.map((s) => s.text).join("");
  }

  /** Writes ``text`` from column ``col``, overwriting what is there. */
  write(col: number, text: string, sgr: string, stream: Stream): void {
    if (!text) return;
    if (col >= this.length) {
      if (col > this.length) this.segments.push({ text: " ".repeat(col - this.length), sgr: "", stream });
      const last = this.segments[this.segments.length - 1];
      if (last && last.sgr === sgr && last.stream === stream) last.text += text;
      else this.segments.push({ text, sgr, stream });
    } else {
      const end = col + text.length;
      this.segments = [...this.slice(0, col), { text, sgr, stream }, ...this.slice(end, Infinity)];
    }
    this.length = this.segments.reduce((n, s) => n + s.text.length, 0);
  }

  /** ESC[K: everything from ``col`` on goes. */
  eraseFrom(col: number): void {
    this.segments = this.slice(0, col);
    this.length = Math.min(this.length, col);
  }

  private slice(from: number, to: number): Segment[] {
    const out: Segment[] = [];
    let at = 0;
    for (const s of this.segments) {
      const start = Math.max(from - at, 0);
      const stop = Math.min(to - at, s.text.length);
      if (stop > start) out.push({ ...s, text: s.text.slice(start, stop) });
      at += s.text.length;
    }
    return out;
  }
}

// An escape sequence (CSI, or a two-character ESC x), a line end, or a carriage return.
const TOKENS = /(\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r\n|\r|\n)/;

export class TerminalModel {
  lines: Line[] = [new Line()];
  private col = 0;
  /** A carriage return came: the next text replaces the line. */
  private returned = false;
  private readonly sgr: Record<string, string> = {};
  /** Lines changed since the view last drew (indexes). */
  readonly dirty = new Set<number>();

  clear(): void {
    this.lines = [new Line()];
    this.col = 0;
    this.returned = false;
    for (const key of Object.keys(this.sgr)) delete this.sgr[key];
    this.dirty.clear();
  }

  get empty(): boolean {
    return this.lines.length === 1 && this.lines[0].length === 0;
  }

  /** The whole text, without escape sequences (for Copy). */
  text(): string {
    return this.lines.map((l) => l.text()).join("\n");
  }

  write(stream: Stream, text: string): void {
    for (const token of text.split(TOKENS)) {
      if (!token) continue;
      const line = this.lines[this.lines.length - 1];
      if (token === "\n" || token === "\r\n") {
        // The line ended gets its newline drawn; the new one is drawn when it has text.
        this.dirty.add(this.lines.length - 1);
        this.lines.push(new Line());
        this.col = 0;
        this.returned = false;
      } else if (token === "\r") {
        this.col = 0;
        this.returned = true;
      } else if (token.startsWith("\x1b")) {
        this.escape(stream, token, line);
      } else {
        if (this.returned) line.eraseFrom(0);
        this.returned = false;
        line.write(this.col, token, this.sgr[stream] ?? "", stream);
        this.col += token.length;
        this.dirty.add(this.lines.length - 1);
      }
    }
  }

  /** A block of its own (a displayed value): starts on a fresh line and ends with one. */
  writeBlock(text: string, label: string | null): void {
    if (this.lines[this.lines.length - 1].length > 0) this.write("stdout", "\n");
    if (label) this.write("value-label", `${label}\n`);
    this.write("value", text.endsWith("\n") ? text : `${text}\n`);
  }

  private escape(stream: Stream, token: string, line: Line): void {
    const final = token[token.length - 1];
    if (!token.startsWith("\x1b[")) return; // OSC, charset selection...: nothing to show
    const params = token.slice(2, -1);
    if (final === "m") {
      // A reset (ESC[m, ESC[0m) forgets what came before; anything else adds to it.
      this.sgr[stream] = params === "" || params === "0" ? "" : (this.sgr[stream] ?? "") + token;
    } else if (final === "K") {
      if (params === "2") line.eraseFrom(0);
      else if (params === "" || params === "0") line.eraseFrom(this.col);
      this.dirty.add(this.lines.length - 1);
    } else if (final === "G") {
      this.col = Math.max(0, (parseInt(params, 10) || 1) - 1);
    }
  }
}

/** Lines longer than this are drawn cut, with a button that draws the rest. */
export const LINE_SHOWN = 4000;
/** Up to this many lines, all are in the DOM (the browser's find sees them); beyond, a window. */
export const VIRTUAL_FROM = 1500;
/** Lines drawn above and below the visible ones. */
const MARGIN = 60;

/**
 * Draws a TerminalModel into a <pre>: every line up to VIRTUAL_FROM, then only the lines the
 * scrolling ``viewport`` shows, between two spacers that keep the scroll height right.
 */
export class TerminalView {
  private readonly ansi = new AnsiUp();
  private readonly drawn = new Map<number, HTMLElement>();
  private frame: number | null = null;
  private lineHeight = 0;
  private window: [number, number] = [0, 0];
  private readonly top = document.createElement("span");
  private readonly bottom = document.createElement("span");

  constructor(
    readonly model: TerminalModel,
    private readonly pre: HTMLElement,
    private readonly viewport: HTMLElement,
    /** Wraps each drawing: keeps the view pinned to the bottom when it was there. */
    private readonly follow: (change: () => void) => void,
  ) {
    this.ansi.use_classes = true;
    this.ansi.escape_html = true;
    this.top.className = "terminal-spacer";
    this.bottom.className = "terminal-spacer";
    viewport.addEventListener("scroll", () => {
      if (this.virtual) this.schedule();
    }, { passive: true });
  }

  get virtual(): boolean {
    return this.model.lines.length > VIRTUAL_FROM;
  }

  clear(): void {
    this.model.clear();
    this.drawn.clear();
    this.pre.replaceChildren();
    this.window = [0, 0];
  }

  /** Draws on the next frame (many writes, one drawing). */
  schedule(): void {
    if (this.frame !== null) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.follow(() => this.draw());
    });
  }

  /** Draws now (the run ended: tests and people read the final text at once). */
  flush(): void {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.follow(() => this.draw());
  }

  private draw(): void {
    const lines = this.model.lines;
    // A trailing empty line (after the last newline) is not drawn: the text ends with "\n".
    const count = lines.length - (lines[lines.length - 1].length === 0 ? 1 : 0);
    // Drawn lines in view only are all one height: such an output does not wrap (panes/output.css).
    this.pre.dataset.virtual = String(this.virtual);
    if (!this.virtual) {
      if (this.pre.contains(this.top)) {
        this.pre.replaceChildren();
        this.drawn.clear();
      }
      for (const i of this.model.dirty) this.drawn.get(i)?.replaceWith(this.lineElement(i));
      for (let i = this.pre.childElementCount; i < count; i++) this.pre.append(this.lineElement(i));
      while (this.pre.childElementCount > count) {
        this.drawn.delete(this.pre.childElementCount - 1);
        this.pre.lastElementChild!.remove();
      }
      this.model.dirty.clear();
      return;
    }
    this.measure();
    const offset = this.pre.offsetTop;
    const first = Math.max(0, Math.floor((this.viewport.scrollTop - offset) / this.lineHeight) - MARGIN);
    const visible = Math.ceil(this.viewport.clientHeight / this.lineHeight);
    let last = Math.min(count, first + visible + 2 * MARGIN);
    // Pinned to the bottom: the window is the end.
    const atEnd = this.viewport.scrollHeight - this.viewport.scrollTop - this.viewport.clientHeight < this.lineHeight * 2;
    let from = first;
    if (atEnd) {
      last = count;
      from = Math.max(0, count - visible - 2 * MARGIN);
    }
    const same = this.window[0] === from && this.window[1] === last && this.pre.contains(this.top);
    if (same) {
      for (const i of this.model.dirty) this.drawn.get(i)?.replaceWith(this.lineElement(i));
    } else {
      this.drawn.clear();
      const elements: HTMLElement[] = [];
      for (let i = from; i < last; i++) elements.push(this.lineElement(i));
      this.pre.replaceChildren(this.top, ...elements, this.bottom);
      this.window = [from, last];
    }
    this.top.style.height = `${from * this.lineHeight}px`;
    this.bottom.style.height = `${(count - last) * this.lineHeight}px`;
    this.model.dirty.clear();
  }

  private measure(): void {
    const probe = this.pre.querySelector<HTMLElement>(".term-line");
    const height = probe?.getBoundingClientRect().height ?? 0;
    this.lineHeight = height > 0 ? height : parseFloat(getComputedStyle(this.pre).lineHeight) || 18;
  }

  private lineElement(index: number): HTMLElement {
    const line = this.model.lines[index];
    const element = document.createElement("span");
    element.className = "term-line";
    let shown = 0;
    const limit = line.expanded ? Infinity : LINE_SHOWN;
    for (const segment of line.segments) {
      if (shown >= limit) break;
      const text = segment.text.slice(0, limit - shown);
      shown += text.length;
      const span = document.createElement("span");
      span.className = segment.stream;
      if (segment.sgr) {
        // A fresh state for each segment: its own SGR sequences, then its text.
        this.ansi.ansi_to_html("\x1b[0m");
        span.innerHTML = this.ansi.ansi_to_html(segment.sgr + text);
        for (const link of span.querySelectorAll("a")) {
          link.target = "_blank";
          link.rel = "noopener noreferrer nofollow";
        }
      } else {
        span.textContent = text;
      }
      element.append(span);
    }
    if (line.length > shown) {
      const more = document.createElement("button");
      more.type = "button";
      more.className = "link-button term-more";
      more.textContent = t("… {n} more characters", { n: formatNumber(line.length - shown) });
      more.title = t("Show the whole line");
      more.addEventListener("click", () => {
        line.expanded = true;
        this.model.dirty.add(index);
        this.flush();
      });
      element.append(more);
    }
    // The newline is part of the text (Copy, selection, textContent): every line but the last.
    if (index < this.model.lines.length - 1) element.append("\n");
    this.drawn.set(index, element);
    return element;
  }
}
