// A pane that lists cards (figures, timings) under a placeholder that explains what would land
// here: "none yet" while the run streams, "none" once it finished. Subclasses turn the events
// they care about into cards with add().
import type { RunEvent } from "../events";
import { el } from "../dom";
import type { Pane } from "./pane";

export abstract class CardListPane implements Pane {
  abstract readonly id: string;
  abstract readonly title: string;
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;

  protected readonly list: HTMLElement;
  private readonly placeholder: HTMLElement;
  private count = 0;
  private finished = false;

  constructor(className: string, listClassName: string) {
    this.element = el("div", `pane-scroll ${className}`);
    this.placeholder = el("div", "pane-placeholder");
    this.list = el("div", listClassName);
    this.element.append(this.placeholder, this.list);
  }

  reset(): void {
    this.list.replaceChildren();
    this.count = 0;
    this.finished = false;
    this.clear();
    this.renderPlaceholder();
  }

  idle(): void {
    this.reset();
  }

  handle(event: RunEvent): void {
    if (event.type === "finished") {
      this.finished = true;
      this.renderPlaceholder();
      return;
    }
    this.take(event);
  }

  /** One more item is shown (the card is already in ``list``). */
  protected added(): void {
    this.count += 1;
    this.renderPlaceholder();
    this.onChange?.(this.count);
  }

  /** Forget the subclass's own per-run state. */
  protected clear(): void {}

  /** Render the events this pane shows: append to ``list``, then call ``added()``. */
  protected abstract take(event: RunEvent): void;

  /** The placeholder's title (none yet / none in this run) and its explanation. */
  protected abstract placeholderText(finished: boolean): [string, (string | Node)[]];

  private renderPlaceholder(): void {
    this.placeholder.hidden = this.count > 0;
    if (this.count > 0) return;
    const [title, body] = this.placeholderText(this.finished);
    this.placeholder.replaceChildren(el("p", "pane-placeholder-title", title), el("p", null, ...body));
  }
}
