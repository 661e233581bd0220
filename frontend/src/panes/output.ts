// The "Output" tab: stdout and stderr as they arrive, values shown as text (a trailing
// expression's, as in Jupyter) in order with them, then the exception, if any.
import type { ErrorEvent, RunEvent } from "../events";
import { el, str } from "../format";
import { isMac } from "../platform";
import { isTextDisplay } from "./figures";
import type { Pane } from "./pane";

/** What the other tabs hold, for the hint shown when a run printed nothing. */
export interface OtherContent {
  id: string;
  title: string;
  count: number;
}

/** How close to the bottom (px) still counts as "following the output". */
const FOLLOW_SLACK_PX = 24;

export class OutputPane implements Pane {
  readonly id = "output";
  readonly title = "Output";
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;

  private readonly output: HTMLPreElement;
  private readonly placeholder: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly errorBox: HTMLElement;
  private lastStream: "stdout" | "stderr" | null = null;
  private lastText: Text | null = null;

  constructor(
    private readonly onLineClick: (line: number) => void,
    private readonly others: () => OtherContent[] = () => [],
    private readonly showTab: (id: string) => void = () => {},
  ) {
    this.element = document.createElement("div");
    this.element.className = "output-scroll";

    this.placeholder = document.createElement("p");
    this.placeholder.className = "output-placeholder";

    this.output = document.createElement("pre");
    this.output.id = "output";
    this.output.className = "output";
    this.output.setAttribute("role", "log");
    this.output.setAttribute("aria-label", "Program output");

    this.notice = document.createElement("p");
    this.notice.className = "output-notice";
    this.notice.hidden = true;

    this.errorBox = document.createElement("div");
    this.errorBox.id = "error-box";
    this.errorBox.className = "error-box";
    this.errorBox.setAttribute("role", "alert");
    this.errorBox.hidden = true;

    this.element.append(this.placeholder, this.output, this.errorBox, this.notice);
    this.idle();
  }

  idle(): void {
    this.reset();
    this.showPlaceholder(idleHint());
  }

  reset(): void {
    this.output.replaceChildren();
    this.lastStream = null;
    this.lastText = null;
    this.errorBox.hidden = true;
    this.errorBox.replaceChildren();
    this.notice.hidden = true;
    this.showPlaceholder("Waiting for output…");
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case "stdout":
      case "stderr":
        if (event.text) this.follow(() => this.append(event.type, event.text));
        break;
      case "display":
        if (isTextDisplay(event)) this.follow(() => this.appendValue(event.text as string, str(event.label)));
        break;
      case "error":
        this.follow(() => this.showError(event));
        break;
      case "finished":
        if (event.truncated) {
          this.follow(() => {
            this.notice.textContent = "Output was cut off here: the run reached its output limit.";
            this.notice.hidden = false;
          });
        }
        if (this.output.childNodes.length === 0 && this.errorBox.hidden) this.showNothingPrinted();
        break;
      default:
        break;
    }
  }

  private append(stream: "stdout" | "stderr", text: string): void {
    this.placeholder.hidden = true;
    if (stream === this.lastStream && this.lastText) {
      this.lastText.appendData(text);
      return;
    }
    const span = document.createElement("span");
    span.className = stream;
    this.lastText = document.createTextNode(text);
    span.append(this.lastText);
    this.output.append(span);
    this.lastStream = stream;
  }

  /** A value shown as text: a block of its own between the prints. */
  private appendValue(text: string, label: string | null): void {
    this.placeholder.hidden = true;
    const block = el(
      "span",
      "value",
      label ? el("span", "value-label", `${label}\n`) : null,
      text.endsWith("\n") ? text : `${text}\n`,
    );
    block.title = "A value the run displayed";
    this.output.append(block);
    this.lastStream = null;
    this.lastText = null;
  }

  /** No output, but maybe compiled code, timings or figures: say where they are. */
  private showNothingPrinted(): void {
    const others = this.others().filter((o) => o.count > 0);
    if (others.length === 0) {
      this.showPlaceholder("The run printed nothing.");
      return;
    }
    this.placeholder.replaceChildren("The run printed nothing. It left ");
    others.forEach((other, i) => {
      if (i > 0) this.placeholder.append(i === others.length - 1 ? " and " : ", ");
      const link = el("button", "link-button", `${other.title.toLowerCase()} (${other.count})`);
      link.type = "button";
      link.addEventListener("click", () => this.showTab(other.id));
      this.placeholder.append(link);
    });
    this.placeholder.append(".");
    this.placeholder.hidden = false;
  }

  private showError(event: ErrorEvent): void {
    this.placeholder.hidden = true;
    const title = document.createElement("div");
    title.className = "error-title";
    const type = document.createElement("span");
    type.className = "error-type";
    type.textContent = event.exc_type || "Error";
    title.append(type);
    if (event.message) title.append(`: ${event.message}`);
    this.errorBox.replaceChildren(title);

    const explanation = str(event.explanation);
    if (explanation) this.errorBox.append(el("p", "error-explanation", explanation));

    if (typeof event.line === "number") {
      const where = document.createElement("button");
      where.type = "button";
      where.className = "error-line";
      where.textContent = `line ${event.line}`;
      where.title = "Show this line in the editor";
      const line = event.line;
      where.addEventListener("click", () => this.onLineClick(line));
      this.errorBox.append(where);
    }

    const traceback = (event.traceback ?? "").trim();
    if (traceback) {
      const details = document.createElement("details");
      details.className = "error-traceback";
      const summary = document.createElement("summary");
      summary.textContent = "Traceback";
      const pre = document.createElement("pre");
      pre.textContent = traceback;
      details.append(summary, pre);
      this.errorBox.append(details);
    }
    this.errorBox.hidden = false;
  }

  private showPlaceholder(text: string): void {
    this.placeholder.textContent = text;
    this.placeholder.hidden = false;
  }

  /** Runs a DOM change and keeps the view pinned to the bottom if it was there before. */
  private follow(change: () => void): void {
    const el = this.element;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight <= FOLLOW_SLACK_PX;
    change();
    if (atBottom) el.scrollTop = el.scrollHeight;
  }
}

function idleHint(): string {
  return `Press Run or ${isMac() ? "⌘" : "Ctrl"}+Enter to run your code.`;
}
