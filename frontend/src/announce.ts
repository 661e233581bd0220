// What a screen reader hears of a run: its start, its output (a line at a time, at most every
// few seconds, so a flood is one sentence and not a thousand), its error and how it ended. One
// polite live region (role="status"); the visible badge and clock stay out of it, since a clock
// that ticks ten times a second would speak without pause.
import type { RunEvent } from "./events";
import type { RunView } from "./run";
import { statusWord } from "./status";

/** The shortest gap between two announcements of new output. */
const OUTPUT_EVERY_MS = 3000;
const LONGEST = 160;

export class Announcer implements RunView {
  private readonly region: HTMLElement;
  private lines = 0;
  private lastLine = "";
  private timer: number | null = null;
  private lastOutputAt = 0;

  constructor() {
    this.region = document.createElement("div");
    this.region.id = "announcer";
    this.region.className = "visually-hidden";
    this.region.setAttribute("role", "status");
    document.body.append(this.region);
  }

  /** Says ``text`` once (the same words twice in a row are said again too). */
  say(text: string): void {
    // A region whose text is set to the same words again is not announced; clear it first.
    this.region.textContent = "";
    window.setTimeout(() => (this.region.textContent = text), 50);
  }

  reset(): void {
    this.dropPending();
    this.lines = 0;
    this.lastLine = "";
  }

  idle(): void {
    this.dropPending();
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case "started":
        this.say("Running.");
        break;
      case "stdout":
      case "stderr":
        this.output(typeof event.text === "string" ? event.text : "");
        break;
      case "error": {
        this.flush();
        const where = typeof event.line === "number" ? ` on line ${event.line}` : "";
        this.say(`Error${where}: ${event.exc_type}: ${clip(event.message ?? "")}`);
        break;
      }
      case "finished": {
        this.flush();
        const wall = typeof event.wall_ms === "number" ? ` in ${(event.wall_ms / 1000).toFixed(1)} s` : "";
        const word = statusWord(event.status, event.message ?? "");
        // An error was just said; the ending follows it a moment later.
        window.setTimeout(() => this.say(`Run ${word}${wall}.`), 400);
        break;
      }
    }
  }

  private output(text: string): void {
    const lines = text.split(/\r?\n|\r/).filter((line) => line.trim() !== "");
    if (lines.length === 0) return;
    this.lines += lines.length;
    this.lastLine = lines[lines.length - 1];
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastOutputAt + OUTPUT_EVERY_MS - Date.now());
    this.timer = window.setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.dropPending();
    if (this.lines === 0) return;
    const count = this.lines === 1 ? "" : ` (${this.lines} new lines)`;
    this.say(`Output${count}: ${clip(this.lastLine)}`);
    this.lines = 0;
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
