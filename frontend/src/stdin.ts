// The run's Input: what the code reads as its standard input (input(), sys.stdin), under the
// editor. A disclosure (closed until it holds something) with a monospace text box and how many
// lines and bytes it holds; Run sends it with the code (POST /api/runs and the run socket's
// start take "stdin"), Share keeps it in the link. The server takes at most INPUT_MAX_BYTES
// (playground/actions/runs.py RUN_MAX_STDIN_BYTES) and refuses a NUL; the box says so before.
import { el, strokeIcon } from "./dom";
import { bytes } from "./format";
import { formatNumber, t, tn } from "./i18n";

/** The most a run's input may be, in bytes of UTF-8 (the server's RUN_MAX_STDIN_BYTES). */
export const INPUT_MAX_BYTES = 256 * 1024;

const encoder = new TextEncoder();

/** Lines as input() reads them: up to each "\n", and a last one without it. */
export function inputLines(text: string): number {
  if (!text) return 0;
  let lines = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines += 1;
  return text.endsWith("\n") ? lines : lines + 1;
}

/** The size of an input in bytes of UTF-8, as the server counts it. */
export function inputBytes(text: string): number {
  return encoder.encode(text).length;
}

export interface InputOptions {
  /** What the box starts with. */
  text: string;
  /** The person changed it (not `load`). */
  onChange?(text: string): void;
}

let boxes = 0;

export class InputBox {
  readonly element: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private readonly body: HTMLElement;
  private readonly text: HTMLTextAreaElement;
  private readonly count: HTMLElement;

  constructor(options: InputOptions) {
    const id = `run-input-${++boxes}`;
    this.toggle = el("button", "input-toggle",
      chevron(), el("span", "input-label", t("Input")), " ", el("code", "input-name", "stdin"));
    this.toggle.type = "button";
    this.toggle.id = `${id}-toggle`;
    this.toggle.title = t("The run's standard input: what input() and sys.stdin read");
    this.toggle.setAttribute("aria-controls", `${id}-body`);
    this.count = el("span", "input-count");
    this.count.id = `${id}-count`;
    this.text = el("textarea", "input-text");
    this.text.id = `${id}-text`;
    this.text.rows = 4;
    this.text.spellcheck = false;
    this.text.wrap = "off";
    this.text.autocomplete = "off";
    this.text.setAttribute("autocapitalize", "off");
    this.text.setAttribute("autocorrect", "off");
    this.text.setAttribute("aria-labelledby", this.toggle.id);
    this.text.setAttribute("aria-describedby", this.count.id);
    this.text.placeholder = t("Lines for input() to read, one per call (sys.stdin.read() reads them all)");
    this.body = el("div", "input-body", this.text);
    this.body.id = `${id}-body`;
    this.element = el("div", "run-input", el("div", "input-bar", this.toggle, this.count), this.body);
    this.element.setAttribute("role", "group");
    this.element.setAttribute("aria-labelledby", this.toggle.id);

    this.text.value = options.text;
    this.toggle.addEventListener("click", () => {
      this.setOpen(!this.isOpen);
      if (this.isOpen) this.text.focus();
    });
    this.text.addEventListener("input", () => {
      this.showCount();
      options.onChange?.(this.text.value);
    });
    // Open from the start when there is something in it (a snippet's input): what Run sends is
    // in sight.
    this.setOpen(options.text !== "");
    this.showCount();
  }

  /** What Run sends: the box's text, exactly. */
  get value(): string {
    return this.text.value;
  }

  get isOpen(): boolean {
    return this.toggle.getAttribute("aria-expanded") === "true";
  }

  /** Shows another document's input (opening it when it holds something). */
  load(text: string): void {
    if (this.text.value === text) return;
    this.text.value = text;
    if (text) this.setOpen(true);
    this.showCount();
  }

  setOpen(open: boolean): void {
    this.toggle.setAttribute("aria-expanded", String(open));
    this.body.hidden = !open;
    this.element.dataset.open = String(open);
  }

  private showCount(): void {
    const text = this.text.value;
    const size = inputBytes(text);
    const lines = inputLines(text);
    this.element.dataset.filled = String(text !== "");
    if (size > INPUT_MAX_BYTES) {
      this.count.textContent = t("{size}: more than a run takes ({limit})", { size: bytes(size), limit: "256 KiB" });
      this.count.dataset.tone = "warning";
    } else if (text.includes("\0")) {
      this.count.textContent = t("It holds a NUL character, which a run does not take");
      this.count.dataset.tone = "warning";
    } else {
      this.count.textContent = text
        ? `${tn("{n} line", "{n} lines", lines, { n: formatNumber(lines) })} · ${bytes(size)}`
        : t("empty");
      delete this.count.dataset.tone;
    }
  }
}

function chevron(): SVGSVGElement {
  const icon = strokeIcon("M6 4l4 4-4 4");
  icon.classList.add("input-chevron");
  return icon;
}

/** A snippet's input, as the server rendered it into its page (#snippet-data), or "". */
export function snippetInput(): string {
  const script = document.getElementById("snippet-data");
  if (!script) return "";
  try {
    const data = JSON.parse(script.textContent ?? "null") as { stdin?: unknown } | null;
    return typeof data?.stdin === "string" ? data.stdin : "";
  } catch {
    return "";
  }
}
