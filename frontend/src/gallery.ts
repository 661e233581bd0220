// The examples gallery: the article's walk-through as runnable snippets
// (playground/examples/NN-slug.py, given to the page as JSON by the template). An example opens
// from the "Examples" menu or from a link to #example=<slug>.
//
// Opening an example never loses the person's code: it is an undoable edit (Ctrl+Z), and code
// that is not itself an untouched example is kept aside; "Restore your code" brings it back.
import { el } from "./format";
import { bindPopover } from "./popover";
import { KEYS, local } from "./storage";

export interface Example {
  slug: string;
  title: string;
  description: string;
  code: string;
}

/** The examples the server rendered into the page, or none. */
export function readExamples(): Example[] {
  const script = document.getElementById("examples-data");
  if (!script) return [];
  try {
    const data = JSON.parse(script.textContent ?? "[]") as unknown;
    if (!Array.isArray(data)) return [];
    return data.filter(
      (e): e is Example =>
        !!e && typeof e.slug === "string" && typeof e.title === "string" && typeof e.code === "string",
    ).map((e) => ({
      ...e,
      // The docstring's lines are wrapped for the file; the menu reflows them.
      description: typeof e.description === "string" ? e.description.replace(/\s+/g, " ").trim() : "",
    }));
  } catch {
    return [];
  }
}

export interface GalleryEditor {
  getCode(): string;
  /** Replaces the code as one undoable edit. */
  setCode(code: string): void;
}

/** What the editor's code started from on a snippet page (/s/<slug>): Reset goes back to it. */
export interface GalleryBase {
  fileName: string;
  title: string;
  code: string;
}

interface GalleryElements {
  button: HTMLButtonElement;
  menu: HTMLElement;
  fileName: HTMLElement;
  reset: HTMLButtonElement;
  restore: HTMLButtonElement;
}

export class Gallery {
  private current: Example | null = null;
  private replacing = false;
  private readonly menu: { close(): void };

  constructor(
    readonly examples: Example[],
    private readonly editor: GalleryEditor,
    private readonly ui: GalleryElements,
    private readonly defaultCode: string,
    private readonly say: (text: string, tone?: "muted" | "warning") => void,
    private readonly base: GalleryBase | null = null,
  ) {
    this.menu = bindPopover(ui.button, ui.menu, () => this.renderMenu());
    ui.button.hidden = examples.length === 0;
    ui.reset.addEventListener("click", () => this.reset());
    ui.restore.addEventListener("click", () => this.restore());
    window.addEventListener("hashchange", () => this.openFromHash());

    // On a snippet page the code is the snippet's, whatever example the draft came from.
    const slug = base ? null : local.get(KEYS.example);
    this.current = examples.find((e) => e.slug === slug) ?? null;
    if (!this.openFromHash()) this.renderHeader();
  }

  /** The editor's code changed. */
  edited(): void {
    if (this.replacing) return;
    // A person's edit: a reload must keep it, so the link no longer names an example.
    if (exampleInHash() !== null) history.replaceState(null, "", location.pathname + location.search);
    this.renderHeader();
  }

  open(slug: string): boolean {
    const example = this.examples.find((e) => e.slug === slug);
    if (!example) return false;
    this.keepOwnCode();
    this.replace(example.code);
    this.current = example;
    local.set(KEYS.example, example.slug);
    if (exampleInHash() !== slug) history.replaceState(null, "", `#example=${encodeURIComponent(slug)}`);
    this.renderHeader();
    this.menu.close();
    return true;
  }

  private openFromHash(): boolean {
    const slug = exampleInHash();
    if (slug === null) return false;
    if (this.open(slug)) return true;
    this.say(`There is no example called “${slug}”.`, "warning");
    return false;
  }

  /** The code Reset goes back to: the current example's, the snippet's, or the starter code. */
  private get baseCode(): string {
    return this.current?.code ?? this.base?.code ?? this.defaultCode;
  }

  /** Back to the current example's code (or the snippet's, or the starter code). */
  private reset(): void {
    this.replace(this.baseCode);
    this.renderHeader();
  }

  private restore(): void {
    const own = local.get(KEYS.scratch);
    if (own === null) return;
    const now = this.editor.getCode();
    local.set(KEYS.scratch, this.isPristine(now) ? null : now);
    this.replace(own);
    this.current = null;
    local.set(KEYS.example, null);
    if (exampleInHash() !== null) history.replaceState(null, "", location.pathname + location.search);
    this.renderHeader();
    this.menu.close();
  }

  /** Before an example replaces the code: keep it if it is the person's own. */
  private keepOwnCode(): void {
    const now = this.editor.getCode();
    if (!this.isPristine(now)) local.set(KEYS.scratch, now);
  }

  private isPristine(code: string): boolean {
    return (
      code.trim() === "" ||
      code === this.defaultCode ||
      code === this.base?.code ||
      this.examples.some((e) => e.code === code)
    );
  }

  private replace(code: string): void {
    if (this.editor.getCode() === code) return;
    this.replacing = true;
    try {
      this.editor.setCode(code);
    } finally {
      this.replacing = false;
    }
  }

  private renderHeader(): void {
    const code = this.editor.getCode();
    const example = this.current;
    const base = example ? null : this.base;
    const modified = (example !== null || base !== null) && code !== this.baseCode;
    const index = example ? this.examples.indexOf(example) + 1 : 0;
    this.ui.fileName.textContent = example
      ? `${String(index).padStart(2, "0")}-${example.slug}.py`
      : (base?.fileName ?? "snippet.py");
    this.ui.fileName.title = example
      ? `${example.title}${modified ? " (edited)" : ""}`
      : base
        ? `${base.title}${modified ? " (edited)" : ""}`
        : "Your code";
    this.ui.fileName.dataset.modified = String(modified);
    this.ui.reset.textContent = example ? "Reset example" : base ? "Reset snippet" : "Reset";
    this.ui.reset.title = example
      ? `Back to the example's code (Ctrl+Z undoes it)`
      : base
        ? "Back to the snippet's code (Ctrl+Z undoes it)"
        : "Back to the starter code (Ctrl+Z undoes it)";
    this.ui.reset.hidden = code === this.baseCode;
    const own = local.get(KEYS.scratch);
    this.ui.restore.hidden = own === null || own === code;
  }

  private renderMenu(): void {
    const items: HTMLElement[] = [];
    const own = local.get(KEYS.scratch);
    if (own !== null && own !== this.editor.getCode()) {
      const b = el(
        "button",
        "example-item example-own",
        el("span", "example-number", "↩"),
        el(
          "span",
          "example-text",
          el("span", "example-title", "Your code"),
          el("span", "example-description", `What you had before opening ${this.base ? "this link" : "an example"} (${lineCount(own)}).`),
        ),
      );
      b.type = "button";
      b.addEventListener("click", () => this.restore());
      items.push(el("li", null, b));
    }
    this.examples.forEach((example, i) => {
      const b = el(
        "button",
        "example-item",
        el("span", "example-number", String(i + 1)),
        el(
          "span",
          "example-text",
          el("span", "example-title", example.title),
          example.description ? el("span", "example-description", example.description) : null,
        ),
      );
      b.type = "button";
      b.dataset.slug = example.slug;
      if (example === this.current) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => this.open(example.slug));
      items.push(el("li", null, b));
    });
    this.ui.menu.replaceChildren(
      el(
        "div",
        "menu-header",
        el("h2", "menu-title", "Examples"),
        el("p", "menu-sub", "The walk-through of “JAX, the new face of machine learning”, runnable."),
      ),
      el("ol", "example-list", ...items),
    );
  }
}

function exampleInHash(): string | null {
  const match = /^#example=([^&]+)/.exec(location.hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

function lineCount(code: string): string {
  const n = code.replace(/\n$/, "").split("\n").length;
  return `${n} line${n === 1 ? "" : "s"}`;
}
