// What a screen reader hears of a run: its start, its output (a line at a time, at most every
// few seconds, so a flood is one sentence and not a thousand), its error and how it ended. One
// polite live region (role="status"); the visible badge and clock stay out of it, since a clock
// that ticks ten times a second would speak without pause.
import type { RunEvent } from "./events";
import { t } from "./i18n";
import type { RunView } from "./run";
import { statusWord } from "./status";
import { TerminalModel } from "./terminal";

/** Where the run's own words (an exception, a printed line) go in a sentence the page says. */
const QUOTED = "\u{E000}";

/** The shortest gap between two announcements of new output. */
const OUTPUT_EVERY_MS = 3000;
const LONGEST = 160;

export class Announcer implements RunView {
  private readonly region: HTMLElement;
  /** The output as the terminal shows it (escape codes gone, a line rewritten by \r once). */
  private readonly model = new TerminalModel();
  private timer: number | null = null;
  private lastOutputAt = 0;

  constructor() {
    this.region = document.createElement("div");
    this.region.id = "announcer";
    this.region.className = "visually-hidden";
    this.region.setAttribute("role", "status");
    document.body.append(this.region);
  }

  /** Says ``text`` once (the same words twice in a row are said again too). ``quoted``: what the
   *  run wrote, in place of QUOTED in ``text``, kept apart as text no page translator touches. */
  say(text: string, quoted?: string): void {
    // A region whose text is set to the same words again is not announced; clear it first.
    this.region.textContent = "";
    window.setTimeout(() => {
      const at = quoted === undefined ? -1 : text.indexOf(QUOTED);
      if (at < 0) {
        this.region.textContent = text;
        return;
      }
      const own = document.createElement("span");
      own.translate = false;
      own.textContent = quoted ?? "";
      this.region.replaceChildren(text.slice(0, at), own, text.slice(at + QUOTED.length));
    }, 50);
  }

  reset(): void {
    this.dropPending();
    this.model.clear();
  }

  idle(): void {
    this.dropPending();
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case "started":
        this.say(t("Running."));
        break;
      case "stdout":
      case "stderr":
        this.output(event.type, typeof event.text === "string" ? event.text : "");
        break;
      case "error": {
        this.flush();
        const said = typeof event.line === "number"
          ? t("Error on line {line}: {error}", { line: event.line, error: QUOTED })
          : t("Error: {error}", { error: QUOTED });
        this.say(said, `${event.exc_type}: ${clip(event.message ?? "")}`);
        break;
      }
      case "finished": {
        this.flush();
        const status = statusWord(event.status, event.message ?? "");
        const said = typeof event.wall_ms === "number"
          ? t("Run {status} in {time}.", { status, time: `${(event.wall_ms / 1000).toFixed(1)} s` })
          : t("Run {status}.", { status });
        // An error was just said; the ending follows it a moment later.
        window.setTimeout(() => this.say(said), 400);
        break;
      }
    }
  }

  private output(stream: "stdout" | "stderr", text: string): void {
    this.model.write(stream, text);
    if (this.changed().length === 0) return;
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastOutputAt + OUTPUT_EVERY_MS - Date.now());
    this.timer = window.setTimeout(() => this.flush(), wait);
  }

  /** The lines the terminal shows differently since the last announcement, with text. */
  private changed(): string[] {
    return [...this.model.dirty]
      .sort((a, b) => a - b)
      .map((i) => this.model.lines[i]?.text() ?? "")
      .filter((line) => line.trim() !== "");
  }

  private flush(): void {
    this.dropPending();
    const lines = this.changed();
    this.model.dirty.clear();
    // Only the line still being written matters for what comes next (a \r rewrites it).
    this.model.lines = this.model.lines.slice(-1);
    if (lines.length === 0) return;
    const said = lines.length === 1
      ? t("Output: {line}", { line: QUOTED })
      : t("Output ({n} new lines): {line}", { n: lines.length, line: QUOTED });
    this.say(said, clip(lines[lines.length - 1]));
    this.lastOutputAt = Date.now();
  }

  private dropPending(): void {
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.timer = null;
  }
}

function clip(text: string): string {
  const line = text.trim();
  return line.length > LONGEST ? `${line.slice(0, LONGEST)}…` : line;
}
