// The "Figures" tab: the images a run shows (matplotlib figures come as PNG), numbered in order,
// and the rich displays that are not plain text. HTML is shown as its text, never as markup:
// it comes from the snippet. Plain-text values go to the Output tab, in order with the prints;
// side-by-side jaxprs go to Compiled.
import type { DisplayEvent, RunEvent } from "../events";
import { el } from "../dom";
import { num, str } from "../format";
import { formatNumber, t } from "../i18n";
import { CardListPane } from "./cardlist";
import { sentence } from "./pane";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"]);
const BASE64 = /^[A-Za-z0-9+/=\s]+$/;
const MAX_GENERIC_CHARS = 4000;

/** Whether the Output tab shows this display (a value or an array's summary, as text). */
export function isTextDisplay(event: DisplayEvent): boolean {
  return (
    event.mime === "text/plain" &&
    typeof event.text === "string" &&
    (event.kind === undefined || event.kind === null || event.kind === "array" || event.kind === "value")
  );
}

export class FiguresPane extends CardListPane {
  readonly id = "figures";
  readonly title = t("Figures");
  private figures = 0;

  /** ``goTo``: shows a line of the snippet in the editor (a figure's "line N" link). */
  constructor(private readonly goTo: (line: number) => void = () => {}) {
    super("figures", "figure-list");
    this.reset();
  }

  protected clear(): void {
    this.figures = 0;
  }

  protected take(event: RunEvent): void {
    if (event.type !== "display" || event.kind === "jaxprs" || isTextDisplay(event)) return;
    const mime = str(event.mime) ?? "";
    let card: HTMLElement;
    // HTML comes as the display's data (or its text), like an image's.
    const html = mime === "text/html" ? (str(event.data) ?? str(event.text)) : null;
    if (IMAGE_TYPES.has(mime) && typeof event.data === "string" && BASE64.test(event.data)) {
      this.figures += 1;
      card = figureCard(event, mime, this.figures, this.goTo);
    } else if (html !== null) {
      card = textCard(t("HTML output, shown as text"), htmlToText(html));
    } else {
      card = genericCard(event);
    }
    this.list.append(card);
    this.added();
  }

  protected placeholderText(finished: boolean): [string, (string | Node)[]] {
    return [
      finished ? t("This run showed no figures.") : t("No figures yet."),
      sentence(t("Matplotlib figures land here: call {show}, or leave them open when the run ends."), {
        show: el("code", null, "plt.show()"),
      }),
    ];
  }
}

function figureCard(event: DisplayEvent, mime: string, n: number, goTo: (line: number) => void): HTMLElement {
  const src = `data:${mime};base64,${(event.data as string).replace(/\s+/g, "")}`;
  const caption = str(event.label);
  // matplotlib's own description ("<Figure size 640x480 with 1 Axes>") makes a fair alt text.
  const description = str(event.text);
  const img = el("img", "figure-image");
  img.src = src;
  const number = formatNumber(n);
  img.alt = figureAlt(number, caption, description);
  const width = num(event.width);
  if (width !== null && width > 0) {
    // Shown at its own size (or narrower): a small figure is not blown up.
    img.width = width;
    const height = num(event.height);
    if (height !== null && height > 0) img.height = height;
  }
  img.decoding = "async";
  img.title = t("Click to show at full size");
  const frame = el("div", "figure-frame", img);
  img.addEventListener("click", () => frame.classList.toggle("is-zoomed"));

  const download = el("a", "figure-download", t("Download"));
  download.href = src;
  download.download = `figure-${n}.${mime === "image/svg+xml" ? "svg" : mime.split("/")[1]}`;
  // The snippet's line that made the figure: shown in the editor on a click.
  const line = num(event.line);
  let lineLink: HTMLButtonElement | null = null;
  if (line !== null && line > 0) {
    lineLink = el("button", "link-button figure-line", t("line {line}", { line }));
    lineLink.type = "button";
    lineLink.title = t("Show the line that made this figure in the editor");
    lineLink.addEventListener("click", () => goTo(line));
  }
  const figcaption = el(
    "figcaption",
    "figure-caption",
    el("span", "figure-number", t("Figure {n}", { n: number })),
    lineLink,
    caption ? el("span", "figure-text", caption) : null,
    el("span", "spacer"),
    download,
  );
  const figure = el("figure", "card figure-card", frame, figcaption);
  figure.id = `figure-${n}`;
  return figure;
}

/** "Figure 2: <caption>", else matplotlib's description of it, in the page's words when it is
 *  matplotlib's usual one ("<Figure size 640x480 with 1 Axes>"). */
function figureAlt(n: string, caption: string | null, description: string | null): string {
  if (caption) return t("Figure {n}: {caption}", { n, caption });
  const m = /^<Figure size (\d+)x(\d+) with (\d+) Axes>$/.exec(description ?? "");
  if (m) return t("Figure {n}: <Figure size {width}x{height} with {axes} Axes>", { n, width: m[1], height: m[2], axes: m[3] });
  if (description) return t("Figure {n}: {caption}", { n, caption: description });
  return t("Figure {n}", { n });
}

function textCard(title: string, text: string): HTMLElement {
  const pre = el("pre", "display-text");
  pre.textContent = text;
  return el("section", "card display-card", el("header", "card-header", el("h2", "card-title", title)), pre);
}

/** The text of an HTML fragment: parsed inert (DOMParser runs no scripts, loads nothing). */
function htmlToText(html: string): string {
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const node of doc.querySelectorAll("script, style")) node.remove();
  for (const node of doc.querySelectorAll("br, p, div, tr, li, h1, h2, h3, h4, table")) {
    node.append("\n");
  }
  for (const node of doc.querySelectorAll("td, th")) node.append("\t");
  return (doc.body.textContent ?? "").replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}

/** A display of a kind this page does not know yet. */
function genericCard(event: DisplayEvent): HTMLElement {
  const title = str(event.kind) ?? str(event.mime) ?? t("display");
  let text: string;
  if (typeof event.text === "string") text = event.text;
  else {
    const { seq: _seq, ts: _ts, type: _type, ...rest } = event;
    text = JSON.stringify(rest, null, 2);
  }
  if (text.length > MAX_GENERIC_CHARS) text = `${text.slice(0, MAX_GENERIC_CHARS)}\n…`;
  return textCard(title, text);
}
