// The examples gallery: the article's walk-through as runnable snippets
// (playground/examples/NN-slug.py, given to the page as JSON by the template). An example opens
// from the "Examples" menu or from a link to #example=<slug>.
//
// Opening an example never loses the person's code: it is an undoable edit (Ctrl+Z), and each
// document's edits are a draft of their own (drafts.ts), listed in the menu; "Restore your
// code" brings the person's own code back.
import { RESET_PREFIX, type Draft, type Drafts } from "./drafts";
import { el } from "./dom";
import { formatNumber, t, tn } from "./i18n";
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

/** Whether `code` keeps none of `base`'s lines (blank lines and indentation aside): all of an
 *  example's code replaced, not edited. */
export function nothingShared(code: string, base: string): boolean {
  const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const kept = new Set(lines(base));
  const mine = lines(code);
  return mine.length > 0 && !mine.some((line) => kept.has(line));
}

export interface GalleryEditor {
  getCode(): string;
  /** Replaces the code as one undoable edit. */
  setCode(code: string): void;
}

/** What the editor's code started from on a snippet page (/s/<slug>): Reset goes back to it. */
export interface GalleryBase {
  slug: string;
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
  /** Where "Code reset. Undo" shows after a Reset. */
  undoBar: HTMLElement;
}

export interface GalleryOptions {
  examples: Example[];
  drafts: Drafts;
  /** The Examples button and its menu; the editor header's file name, Reset and Restore. */
  elements: GalleryElements;
  /** The person's own code before they have written any. */
  defaultCode: string;
  /** Tells the person something (an example that does not exist, a deleted draft). */
  say(text: string, tone?: "muted" | "warning"): void;
  /** On a snippet's page: the snippet, which the editor holds. */
  base?: GalleryBase | null;
}

/** One thing the editor can hold: the person's own code, an example or a shared snippet. Each
 *  has a draft of its own once edited. */
interface Doc {
  key: string;
  title: string;
  fileName: string;
  /** The code it starts from (and Reset goes back to). */
  base: string;
  kind: "own" | "example" | "snippet";
}

export class Gallery {
  private current: Doc;
  private replacing = false;
  /** What the last Reset replaced, while its undo bar shows. */
  private undo: { doc: Doc; code: string } | null = null;
  private editor: GalleryEditor | null = null;
  private readonly menu: { close(): void };

  readonly examples: Example[];
  private readonly drafts: Drafts;
  private readonly ui: GalleryElements;
  private readonly defaultCode: string;
  private readonly say: (text: string, tone?: "muted" | "warning") => void;
  private readonly base: GalleryBase | null;

  constructor(options: GalleryOptions) {
    const { examples, drafts, elements: ui, base = null } = options;
    this.examples = examples;
    this.drafts = drafts;
    this.ui = ui;
    this.defaultCode = options.defaultCode;
    this.say = options.say;
    this.base = base;
    this.menu = bindPopover(ui.button, ui.menu, () => this.renderMenu());
    ui.button.hidden = examples.length === 0 && !drafts.list().length;
    ui.reset.addEventListener("click", () => this.reset());
    ui.restore.addEventListener("click", () => this.open(this.own()));
    window.addEventListener("hashchange", () => this.openFromHash());
    drafts.onChange(() => this.renderHeader());
    // A snippet page holds the snippet; elsewhere, whatever was open last.
    this.current = base ? this.snippetDoc(base) : (this.docFor(local.get(KEYS.current) ?? "own") ?? this.own());
    const fromHash = this.exampleFromHash();
    if (fromHash) this.current = fromHash;
  }

  /** The code the editor starts with: the open document's draft, else its own code. */
  get startingCode(): string {
    return this.drafts.get(this.current.key)?.code ?? this.current.base;
  }

  /** The editor exists: show where its code came from. */
  attach(editor: GalleryEditor): void {
    this.editor = editor;
    if (location.hash && !this.exampleFromHash() && exampleInHash() !== null) {
      this.say(t("There is no example called “{slug}”.", { slug: exampleInHash() ?? "" }), "warning");
    }
    this.remember();
    this.renderHeader();
  }

  /** The editor's code changed: a person's edit is the open document's draft. */
  edited(): void {
    if (this.replacing || !this.editor) return;
    // Typing after a Reset: Undo would replace this typing, so it goes (the draft stays).
    if (this.undo) this.hideUndo();
    const code = this.editor.getCode();
    if (code === this.current.base) this.drafts.remove(this.current.key);
    else this.drafts.save(this.current.key, this.current.title, code);
    // A reload must keep the edit, so the link no longer names an example.
    if (exampleInHash() !== null) history.replaceState(null, "", location.pathname + location.search);
    this.renderHeader();
  }

  /** The editor's code was shared from a snippet's page as a link of its own (a fork): the
   *  draft of this page's snippet that holds exactly that code is the fork's now, not the
   *  original's, and goes. Further edits here are the original's draft again. */
  forked(code: string): void {
    if (this.current.kind !== "snippet") return;
    if (this.drafts.get(this.current.key)?.code === code) this.drafts.remove(this.current.key);
    this.renderHeader();
  }

  /** The server's copy of the drafts arrived: an editor nobody has typed in yet shows it. */
  refresh(untouched: boolean): void {
    if (!this.editor) return;
    const draft = this.drafts.get(this.current.key);
    if (untouched && draft && draft.code !== this.editor.getCode()) this.replace(draft.code);
    this.renderHeader();
  }

  /** Opens an example by its slug (from the menu, a link or the console). */
  openExample(slug: string): boolean {
    const doc = this.docFor(`example:${slug}`);
    if (!doc) return false;
    this.open(doc);
    return true;
  }

  private open(doc: Doc): void {
    if (this.undo && this.undo.doc.key !== doc.key) this.hideUndo();
    this.current = doc;
    this.replace(this.drafts.get(doc.key)?.code ?? doc.base);
    this.remember();
    const slug = doc.kind === "example" ? doc.key.slice("example:".length) : null;
    if (slug !== null && exampleInHash() !== slug) history.replaceState(null, "", `#example=${encodeURIComponent(slug)}`);
    else if (slug === null && exampleInHash() !== null) history.replaceState(null, "", location.pathname + location.search);
    this.renderHeader();
    this.menu.close();
  }

  private openFromHash(): void {
    const doc = this.exampleFromHash();
    if (doc) this.open(doc);
    else if (exampleInHash() !== null) this.say(t("There is no example called “{slug}”.", { slug: exampleInHash() ?? "" }), "warning");
  }

  private exampleFromHash(): Doc | null {
    const slug = exampleInHash();
    return slug === null ? null : this.docFor(`example:${slug}`);
  }

  /** The home page reopens the document that was open last; a snippet page is its snippet's. */
  private remember(): void {
    if (this.current.kind !== "snippet") local.set(KEYS.current, this.current.key);
  }

  private own(): Doc {
    return { key: "own", title: t("Your code"), fileName: "snippet.py", base: this.defaultCode, kind: "own" };
  }

  private snippetDoc(base: GalleryBase): Doc {
    return { key: `snippet:${base.slug}`, title: base.title, fileName: base.fileName, base: base.code, kind: "snippet" };
  }

  private docFor(key: string): Doc | null {
    if (key === "own") return this.own();
    if (this.base && key === `snippet:${this.base.slug}`) return this.snippetDoc(this.base);
    const slug = key.startsWith("example:") ? key.slice("example:".length) : null;
    const index = this.examples.findIndex((e) => e.slug === slug);
    if (index < 0) return null;
    const example = this.examples[index];
    return {
      key,
      title: example.title,
      fileName: `${String(index + 1).padStart(2, "0")}-${example.slug}.py`,
      base: example.code,
      kind: "example",
    };
  }

  /** Back to the open document's own code. Nothing is lost: the code it replaced is kept as a
   *  draft of its own ("… before Reset", in this browser), and the bar under the editor's header
   *  undoes it (so does Ctrl+Z). */
  private reset(): void {
    if (!this.editor) return;
    const doc = this.current;
    const before = this.editor.getCode();
    this.replace(doc.base);
    this.drafts.remove(doc.key);
    if (before !== doc.base) this.drafts.save(RESET_PREFIX + doc.key, t("{title} (before Reset)", { title: doc.title }), before);
    this.renderHeader();
    this.showUndo(doc, before);
  }

  private showUndo(doc: Doc, code: string): void {
    this.undo = { doc, code };
    const button = el("button", "button button-small undo-button", t("Undo"));
    button.type = "button";
    button.title = t("Bring back the code you had before Reset");
    button.addEventListener("click", () => this.undoReset());
    const close = el("button", "button button-icon button-quiet undo-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", t("Dismiss"));
    close.title = t("Dismiss (the code before Reset stays in Examples ▸ Your drafts)");
    close.addEventListener("click", () => {
      this.hideUndo();
      this.ui.button.focus();
    });
    this.ui.undoBar.replaceChildren(
      el("span", "undo-text", t("Code reset."), " ", el("span", "undo-sub", t("The code before it is kept in Examples ▸ Your drafts."))),
      button,
      close,
    );
    this.ui.undoBar.hidden = false;
    // The Reset button is gone with the edits it reset: the keyboard goes on to Undo.
    button.focus();
  }

  private hideUndo(): void {
    this.undo = null;
    this.ui.undoBar.hidden = true;
    this.ui.undoBar.replaceChildren();
  }

  private undoReset(): void {
    const undo = this.undo;
    if (!undo || !this.editor) return;
    this.hideUndo();
    if (this.current.key !== undo.doc.key) this.open(undo.doc);
    this.drafts.remove(RESET_PREFIX + undo.doc.key);
    this.replace(undo.code);
    this.edited();
    this.ui.reset.focus();
  }

  /** A draft kept by a Reset, opened from the menu: its code goes back to its document. */
  private openResetDraft(draft: Draft): void {
    const key = draft.key.slice(RESET_PREFIX.length);
    const doc = this.docFor(key);
    const title = beforeReset(draft.title);
    this.drafts.save(key, doc?.title ?? title, draft.code);
    this.drafts.remove(draft.key);
    if (doc) this.open(doc);
    else if (key.startsWith("snippet:")) location.href = `/s/${encodeURIComponent(key.slice("snippet:".length))}`;
  }

  private replace(code: string): void {
    if (!this.editor || this.editor.getCode() === code) return;
    this.replacing = true;
    try {
      this.editor.setCode(code);
    } finally {
      this.replacing = false;
    }
  }

  private renderHeader(): void {
    if (!this.editor) return;
    const code = this.editor.getCode();
    const doc = this.current;
    const modified = doc.kind !== "own" && code !== doc.base;
    // Every line of an example replaced: the code is the person's now, not "05-vmap.py".
    const replaced = doc.kind === "example" && modified && nothingShared(code, doc.base);
    this.ui.fileName.textContent = replaced ? "snippet.py" : doc.fileName;
    this.ui.fileName.title = doc.kind === "own" ? t("Your code")
      : replaced ? t("Your code, in place of {title}", { title: doc.title })
        : modified ? t("{title} (edited)", { title: doc.title }) : doc.title;
    this.ui.fileName.dataset.modified = String(modified);
    this.ui.reset.textContent = { own: t("Reset"), example: t("Reset example"), snippet: t("Reset snippet") }[doc.kind];
    this.ui.reset.title = {
      own: t("Back to the starter code (Ctrl+Z undoes it)"),
      example: t("Back to the example's code (Ctrl+Z undoes it)"),
      snippet: t("Back to the snippet's code (Ctrl+Z undoes it)"),
    }[doc.kind];
    this.ui.reset.hidden = code === doc.base;
    this.ui.restore.hidden = doc.kind === "own" || this.drafts.get("own") === null;
    this.ui.button.hidden = this.examples.length === 0 && !this.drafts.list().length;
  }

  private renderMenu(): void {
    const drafts = this.drafts.list().filter((d) => d.key === "own" || this.docFor(d.key) || d.key.startsWith("snippet:")
      || d.key.startsWith(RESET_PREFIX));
    const draftItems = drafts.map((draft) => this.draftItem(draft));
    const exampleItems = this.examples.map((example, i) => {
      const key = `example:${example.slug}`;
      const b = el(
        "button",
        "example-item",
        el("span", "example-number", String(i + 1)),
        el(
          "span",
          "example-text",
          el("span", "example-title", example.title, this.drafts.get(key) ? el("span", "chip", t("edited")) : null),
          example.description ? el("span", "example-description", example.description) : null,
        ),
      );
      b.type = "button";
      b.dataset.slug = example.slug;
      if (key === this.current.key) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => this.openExample(example.slug));
      return el("li", null, b);
    });
    this.ui.menu.replaceChildren(
      ...(draftItems.length
        ? [
            el("div", "menu-header", el("h2", "menu-title", t("Your drafts")),
               el("p", "menu-sub", this.drafts.signedIn
                 ? t("Kept in this browser and your account until you delete them.")
                 : t("Kept in this browser until you delete them."))),
            el("ul", "example-list draft-list", ...draftItems),
          ]
        : []),
      el(
        "div",
        "menu-header",
        el("h2", "menu-title", t("Examples")),
        el("p", "menu-sub", t("The walk-through of “JAX, the new face of machine learning”, runnable.")),
      ),
      el("ol", "example-list", ...exampleItems),
    );
  }

  private draftItem(draft: Draft): HTMLElement {
    const doc = this.docFor(draft.key);
    const snippetSlug = draft.key.startsWith("snippet:") ? draft.key.slice("snippet:".length) : null;
    const open = el(
      "button",
      "example-item draft-item",
      el("span", "example-number", draft.key === "own" ? "↩" : "✎"),
      el(
        "span",
        "example-text",
        el("span", "example-title", draft.key === "own" ? t("Your code") : draft.title || draft.key),
        el("span", "example-description", t("{lines}, edited {ago}", { lines: lineCount(draft.code), ago: ago(draft.updated) })),
      ),
    );
    open.type = "button";
    open.dataset.draft = draft.key;
    if (draft.key === this.current.key) open.setAttribute("aria-current", "true");
    open.addEventListener("click", () => {
      if (draft.key.startsWith(RESET_PREFIX)) this.openResetDraft(draft);
      else if (doc) this.open(doc);
      // Another snippet's draft opens on its own page, beside its saved output.
      else if (snippetSlug) location.href = `/s/${encodeURIComponent(snippetSlug)}`;
    });
    const remove = el("button", "button button-icon button-quiet draft-delete", "×");
    remove.type = "button";
    const name = draft.key === "own" ? t("Your code") : draft.title;
    remove.setAttribute("aria-label", t("Delete the draft “{title}”", { title: name }));
    remove.title = t("Delete this draft");
    remove.addEventListener("click", () => {
      const open = draft.key === this.current.key;
      this.drafts.remove(draft.key);
      if (open) this.replace(this.current.base);
      this.say(t("Deleted the draft “{title}”.", { title: name }));
      this.renderMenu();
      this.renderHeader();
      this.ui.menu.querySelector<HTMLElement>("button")?.focus();
    });
    return el("li", "draft-row", open, remove);
  }
}

/** Drafts kept under the keys of earlier versions of the page (one draft, one aside) become
 *  drafts of their own. */
export function migrateOldDrafts(drafts: Drafts, examples: Example[], defaultCode: string): void {
  const code = local.get(KEYS.code);
  const slug = local.get(KEYS.example);
  const scratch = local.get(KEYS.scratch);
  if (code === null && scratch === null) return;
  const example = examples.find((e) => e.slug === slug);
  if (code !== null) {
    if (example && code !== example.code) drafts.save(`example:${example.slug}`, example.title, code);
    else if (!example && code !== defaultCode && !examples.some((e) => e.code === code)) drafts.save("own", t("Your code"), code);
    if (example) local.set(KEYS.current, `example:${example.slug}`);
  }
  if (scratch !== null && drafts.get("own") === null) drafts.save("own", t("Your code"), scratch);
  for (const key of [KEYS.code, KEYS.example, KEYS.scratch]) local.set(key, null);
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
  return tn("{n} line", "{n} lines", n, { n: formatNumber(n) });
}

/** "just now", "5 min ago", "3 h ago", "2 days ago": short, as the menu has little room
 *  (Intl's relative times say "5 minutes ago"). */
function ago(ms: number): string {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return t("just now");
  if (s < 3600) return t("{n} min ago", { n: Math.floor(s / 60) });
  if (s < 86400) return t("{n} h ago", { n: Math.floor(s / 3600) });
  const days = Math.floor(s / 86400);
  return tn("{n} day ago", "{n} days ago", days, { n: formatNumber(days) });
}

/** A title a Reset marked (drafts.ts RESET_PREFIX), unmarked: in English, or in the language the
 *  page speaks now. */
function beforeReset(title: string): string {
  for (const mark of [" (before Reset)", t("{title} (before Reset)", { title: "" })]) {
    if (mark && title.endsWith(mark)) return title.slice(0, -mark.length);
  }
  return title;
}
