// The "Output" tab: stdout and stderr as they arrive, values shown as text (a trailing
// expression's, as in Jupyter) in order with them, then the exception, if any.
import type { ErrorEvent, RunEvent } from "../events";
import { copyText, el, strokeIcon } from "../dom";
import { explanationText } from "../explanations";
import { richText, str } from "../format";
import { formatNumber, t, tn } from "../i18n";
import { isMac } from "../platform";
import { KEYS, local } from "../storage";
import { isTextDisplay } from "./figures";
import { sentence, type Pane } from "./pane";
import { TerminalModel, TerminalView } from "../terminal";

/** What the other tabs hold, for the hint shown when a run printed nothing. */
export interface OtherContent {
  id: string;
  title: string;
  count: number;
}

/** How close to the bottom (px) still counts as "following the output". */
const FOLLOW_SLACK_PX = 24;

/** One run's printed output: what the Output tab shows of the current run, and of a snippet's
 *  saved run beside it. Only the main view has the ids tests and other code look for. */
class OutputView {
  readonly element: HTMLElement;
  private readonly output: HTMLPreElement;
  private readonly placeholder: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly errorBox: HTMLElement;
  private readonly copyButton: HTMLButtonElement;
  private readonly tools: HTMLElement;
  private readonly terminal: TerminalView;

  constructor(
    private readonly onLineClick: (line: number) => void,
    private readonly others: () => OtherContent[],
    private readonly showTab: (id: string) => void,
    main: boolean,
  ) {
    this.element = document.createElement("div");
    this.element.className = "output-scroll";

    this.placeholder = document.createElement("p");
    this.placeholder.className = "output-placeholder";
    if (main) this.placeholder.id = "output-placeholder";

    this.output = document.createElement("pre");
    if (main) this.output.id = "output";
    this.output.className = "output";
    this.output.setAttribute("role", "log");
    // Not read out as it streams (a flood would never stop talking): the page's announcer says
    // a line of new output at most every few seconds (announce.ts).
    this.output.setAttribute("aria-live", "off");
    this.output.setAttribute("aria-label", main ? t("Program output") : t("Saved program output"));
    // A scrolling region the keyboard can reach and scroll (WCAG 2.1.1).
    this.output.tabIndex = 0;

    this.notice = document.createElement("p");
    this.notice.className = "output-notice";
    this.notice.hidden = true;

    this.errorBox = document.createElement("div");
    if (main) this.errorBox.id = "error-box";
    this.errorBox.className = "error-box";
    if (main) this.errorBox.setAttribute("role", "alert");
    this.errorBox.hidden = true;

    // Copy what was printed (the text, as the page shows it): one button, kept in view.
    const icon = strokeIcon("M5.5 5.5h8v8h-8zM10.5 5.5v-3h-8v8h3"); // two sheets
    this.copyButton = el("button", "button button-small output-copy", icon, el("span", null, t("Copy")));
    this.copyButton.type = "button";
    if (main) this.copyButton.id = "copy-output";
    this.copyButton.title = t("Copy the output to the clipboard");
    this.copyButton.setAttribute("aria-label", t("Copy output"));
    this.copyButton.addEventListener("click", () => void this.copy());

    // Wrap long lines (the default), or keep them as a terminal does (a table printed as text
    // stays a table and scrolls sideways): one choice for every output, remembered.
    const wrapIcon = strokeIcon("M2.5 4h11M2.5 8h9a2 2 0 0 1 0 4H9M10.5 10.5 9 12l1.5 1.5M2.5 12h4"); // a line that wraps
    const wrapButton = el("button", "button button-small output-wrap", wrapIcon, el("span", null, t("Wrap")));
    wrapButton.type = "button";
    if (main) wrapButton.id = "wrap-output";
    wrapButton.title = t("Wrap long lines (off: lines stay as printed and scroll sideways, for tables)");
    wrapButton.setAttribute("aria-pressed", String(wrapLines()));
    wrapButton.addEventListener("click", () => setWrapLines(!wrapLines()));
    onWrapChange((wrap) => wrapButton.setAttribute("aria-pressed", String(wrap)));

    // Beside the text in a column of their own, never over it.
    this.tools = el("div", "output-tools", wrapButton, this.copyButton);
    this.tools.hidden = true;
    this.element.dataset.wrap = String(wrapLines());
    onWrapChange((wrap) => { this.element.dataset.wrap = String(wrap); });

    this.element.append(this.tools, this.placeholder, this.output, this.errorBox, this.notice);
    this.terminal = new TerminalView(new TerminalModel(), this.output, this.element, (change) => this.follow(change));
  }

  private async copy(): Promise<void> {
    const label = this.copyButton.querySelector("span")!;
    const ok = await copyText(this.terminal.model.text());
    label.textContent = ok ? t("Copied") : t("Copy failed");
    window.setTimeout(() => { label.textContent = t("Copy"); }, 1500);
  }

  idle(hint: string): void {
    this.reset();
    this.showPlaceholder(hint);
  }

  reset(): void {
    this.tools.hidden = true;
    this.terminal.clear();
    this.errorBox.hidden = true;
    this.errorBox.replaceChildren();
    delete this.errorBox.dataset.kind;
    this.notice.hidden = true;
    this.showPlaceholder(t("Waiting for output…"));
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case "stdout":
      case "stderr":
        if (event.text) this.append(event.type, event.text);
        break;
      case "display":
        if (isTextDisplay(event)) this.appendValue(event.text as string, str(event.label));
        break;
      case "error":
        this.terminal.flush();
        this.follow(() => this.showError(event));
        break;
      case "finished":
        this.terminal.flush();
        if (event.truncated) {
          this.follow(() => {
            this.notice.textContent = t("Output was cut off here: the run reached its output limit.");
            this.notice.hidden = false;
          });
        }
        if (event.status === "timed_out") this.follow(() => this.showTimedOut(str(event.message)));
        if (this.terminal.model.empty && this.errorBox.hidden) this.showNothingPrinted();
        break;
      default:
        break;
    }
  }

  private append(stream: "stdout" | "stderr", text: string): void {
    this.placeholder.hidden = true;
    this.tools.hidden = false;
    this.terminal.model.write(stream, text);
    this.terminal.schedule();
  }

  /** A value shown as text: a block of its own between the prints. */
  private appendValue(text: string, label: string | null): void {
    this.placeholder.hidden = true;
    this.tools.hidden = false;
    this.terminal.model.writeBlock(text, label);
    this.terminal.schedule();
  }

  /** No output, but maybe compiled code, timings or figures: say where they are. */
  private showNothingPrinted(): void {
    const others = this.others().filter((o) => o.count > 0);
    if (others.length === 0) {
      this.showPlaceholder(t("The run printed nothing."));
      return;
    }
    const tabs = document.createDocumentFragment();
    others.forEach((other, i) => {
      if (i > 0) tabs.append(i === others.length - 1 ? t(" and ") : t(", "));
      const text = t("{tab} ({n})", { tab: other.title.toLowerCase(), n: formatNumber(other.count) });
      const link = el("button", "link-button", text);
      link.type = "button";
      link.addEventListener("click", () => this.showTab(other.id));
      tabs.append(link);
    });
    this.placeholder.replaceChildren(...sentence(t("The run printed nothing. It left {tabs}."), { tabs }));
    this.placeholder.hidden = false;
  }

  /** The quick fix an explanation speaks of, one click away on the card ("Replace all"): the
   *  editor's own, applied to the editor's code (the workbench says which, ``offerFixes``). */
  fixFor: (event: ErrorEvent) => QuickFix | null = () => null;

  private fixButton(fix: QuickFix): HTMLElement {
    const button = el("button", "button button-small button-primary error-fix", fix.label);
    button.type = "button";
    button.title = fix.title;
    const done = el("span", "error-fix-done");
    done.setAttribute("role", "status");
    button.addEventListener("click", () => {
      const n = fix.apply();
      button.disabled = true;
      done.textContent = tn("Replaced {n} character: run again.", "Replaced {n} characters: run again.", n, { n });
    }, { once: true });
    return el("div", "error-fix-row", button, done);
  }

  private showError(event: ErrorEvent): void {
    this.placeholder.hidden = true;
    const title = document.createElement("div");
    title.className = "error-title";
    const type = document.createElement("span");
    type.className = "error-type";
    type.textContent = event.exc_type || t("Error");
    title.append(type);
    if (event.message) title.append(": ", ...richText(event.message));
    this.errorBox.replaceChildren(title);

    const explanation = explanationText(event as unknown as Record<string, unknown>);
    if (explanation) this.errorBox.append(el("p", "error-explanation", ...richText(explanation)));
    const fix = explanation ? this.fixFor(event) : null;
    if (fix) this.errorBox.append(this.fixButton(fix));

    if (typeof event.line === "number") {
      const where = document.createElement("button");
      where.type = "button";
      where.className = "error-line";
      where.textContent = t("line {line}", { line: event.line });
      where.title = t("Show this line in the editor");
      const line = event.line;
      where.addEventListener("click", () => this.onLineClick(line));
      this.errorBox.append(where);
    }

    const traceback = (event.traceback ?? "").trim();
    if (traceback) {
      const details = document.createElement("details");
      details.className = "error-traceback";
      const summary = document.createElement("summary");
      summary.textContent = t("Traceback");
      const pre = document.createElement("pre");
      pre.textContent = traceback;
      details.append(summary, pre);
      this.errorBox.append(details);
    }
    this.errorBox.hidden = false;
  }

  /** Stopped at its wall clock: what to try, under what it printed. */
  private showTimedOut(message: string | null): void {
    const limit = /limit of ([\d.]+ ?s)/.exec(message ?? "")?.[1];
    const title = el("div", "error-title",
      el("span", "error-type", t("Out of time")),
      limit
        ? t(": the run was stopped at its wall-clock limit of {limit}.", { limit })
        : t(": the run was stopped at its wall-clock limit."));
    const advice = el("ul", "timeout-advice",
      el("li", null, t("Try a smaller problem first (fewer steps, smaller arrays, fewer repeats), then grow it.")),
      el("li", null, ...richText(t("Find the slow step: JAX runs asynchronously, so time a step with `%time` and put `jax.block_until_ready(result)` right after it; without it the time shows up at a later line (a `print` or the end of the run)."))),
      el("li", null, t("Where the device menu offers a GPU or a device with a longer limit, run it there.")),
    );
    this.placeholder.hidden = true;
    this.errorBox.replaceChildren(title, advice);
    this.errorBox.dataset.kind = "timeout";
    this.errorBox.hidden = false;
  }

  showPlaceholder(text: string): void {
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

const wrapListeners: ((wrap: boolean) => void)[] = [];

/** Whether the output wraps long lines: yes unless the person turned it off. */
function wrapLines(): boolean {
  return local.get(KEYS.wrap) !== "false";
}

function setWrapLines(wrap: boolean): void {
  local.set(KEYS.wrap, wrap ? null : "false");
  for (const listener of wrapListeners) listener(wrap);
}

function onWrapChange(listener: (wrap: boolean) => void): void {
  wrapListeners.push(listener);
}

function idleHint(): string {
  return t("Press Run or {keys} to run your code.", { keys: `${isMac() ? "⌘" : "Ctrl"}+Enter` });
}

/**
 * The "Output" tab. On a snippet page it also keeps the output the snippet was saved with: shown
 * as the run until a new one starts, then beside the new run's output (two columns) whenever the
 * "Saved output" toggle is on.
 */
/** A fix that an error's explanation offers, applied by a button on its card. */
export interface QuickFix {
  label: string;
  title: string;
  /** Applies it; how many places it changed. */
  apply(): number;
}

export class OutputPane implements Pane {
  readonly id = "output";
  readonly title = t("Output");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  onAlert?: (alert: string | null) => void;

  private readonly live: OutputView;
  private readonly saved: OutputView;
  private readonly bar: HTMLElement;
  private readonly barLabel: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private readonly columns: HTMLElement;
  private readonly savedColumn: HTMLElement;
  private readonly liveHeading: HTMLElement;
  private readonly savedHeading: HTMLElement;
  private idleText = idleHint();
  /** When the snippet's saved run was made ("3 May 2025"), or null: no saved run. */
  private savedWhen: string | null = null;
  /** The main view shows the saved run (no run of this page yet). */
  private showingSaved = false;
  private comparing = false;

  constructor(
    onLineClick: (line: number) => void,
    others: () => OtherContent[] = () => [],
    showTab: (id: string) => void = () => {},
  ) {
    this.live = new OutputView(onLineClick, others, showTab, true);
    this.saved = new OutputView(onLineClick, () => [], () => {}, false);

    this.barLabel = el("span", "output-bar-label");
    const icon = strokeIcon("M2.5 3h4.5v10H2.5zM9 3h4.5v10H9z"); // two columns
    this.toggle = el("button", "button button-small output-toggle", icon, el("span", null, t("Saved output")));
    this.toggle.type = "button";
    this.toggle.id = "saved-output-toggle";
    this.toggle.title = t("Show the output this snippet was saved with beside this run's");
    this.toggle.setAttribute("aria-pressed", "false");
    this.toggle.addEventListener("click", () => {
      this.comparing = !this.comparing;
      this.render();
    });
    this.bar = el("div", "output-bar", this.barLabel, this.toggle);

    this.savedHeading = el("div", "output-column-heading");
    this.liveHeading = el("div", "output-column-heading", t("This run"));
    this.savedColumn = el("section", "output-column output-column-saved", this.savedHeading, this.saved.element);
    this.savedColumn.setAttribute("aria-label", t("Saved output"));
    const liveColumn = el("section", "output-column", this.liveHeading, this.live.element);
    this.columns = el("div", "output-columns", this.savedColumn, liveColumn);

    this.element = el("div", "output-pane", this.bar, this.columns);
    this.idle();
  }
  /** The fixes an error card offers, for this page's editor (``OutputView.fixFor``): the live
   *  run's card only, as the saved output's code is not the editor's. */
  offerFixes(fixFor: (event: ErrorEvent) => QuickFix | null): void {
    this.live.fixFor = fixFor;
  }


  /** What the pane says before any run (a snippet page: that it has not been run yet). */
  setIdleHint(text: string): void {
    this.idleText = text;
  }

  /** The run the snippet was saved with, kept for the "Saved output" toggle. */
  setSaved(events: readonly RunEvent[], when: string): void {
    this.saved.reset();
    for (const event of events) this.saved.handle(event);
    this.savedWhen = when;
    this.savedHeading.textContent = t("Saved · {when}", { when });
    this.render();
  }

  /** The run being shown is the saved one (call after reset()). */
  showSaved(): void {
    this.showingSaved = true;
    this.render();
  }

  idle(): void {
    this.live.idle(this.idleText);
    this.showingSaved = false;
    this.render();
  }

  reset(): void {
    this.live.reset();
    this.showingSaved = false;
    this.render();
  }

  handle(event: RunEvent): void {
    this.live.handle(event);
    // An error is never missed: the Output tab is marked even while another tab is open.
    if (event.type === "error") this.onAlert?.(t("error"));
  }

  private render(): void {
    const hasSaved = this.savedWhen !== null;
    this.bar.hidden = !hasSaved;
    const compare = hasSaved && this.comparing && !this.showingSaved;
    this.barLabel.textContent = this.showingSaved
      ? t("Saved output · {when}", { when: this.savedWhen ?? "" })
      : compare
        ? ""
        : t("This run");
    this.barLabel.title = this.showingSaved
      ? t("The output this snippet was shared with. Opening the link ran nothing.")
      : "";
    this.toggle.hidden = this.showingSaved;
    this.toggle.setAttribute("aria-pressed", String(compare));
    this.columns.dataset.compare = String(compare);
    this.savedColumn.hidden = !compare;
    this.liveHeading.hidden = !compare;
  }
}

