// The "Share" dialog (the toolbar's Share button, Ctrl/Cmd+S): an optional title and Markdown
// description, then "Create link" saves the snippet (POST /api/snippets), with the run's Input
// when there is one (the link's runs read it), and shows its link
// (copied at once), its downloads and the code to embed it. The dialog is the page's <dialog>
// (#share-dialog), opened modal: the browser keeps the focus inside it and Escape closes it;
// the focus goes back where it was.
import { ApiError, createSnippet, getRun, type NewSnippet, type SavedSnippet } from "./api";
import { copyText } from "./dom";
import { formatNumber, language, t, tn } from "./i18n";
import { isMac } from "./platform";
import { inputLines } from "./stdin";

export interface ShareSource {
  getCode(): string;
  /** The run's Input (stdin.ts): what the link's runs read ("": none). */
  getInput?(): string;
  /** The device kind a run would use now. */
  getDevice(): string;
  /** The runtime its runs use (a pinned snippet's), or null for the site's default. */
  getRuntime?(): string | null;
  /** The run the page shows (this page's, or the snippet's saved one), or null. */
  lastRun(): ShownRun | null;
  /** On a snippet page: the snippet. A share of other code becomes its fork. */
  original: OriginalSnippet | null;
  /** A share from a snippet's page made a link of its own (a fork): the code it keeps. */
  onForked?(code: string): void;
}

export interface OriginalSnippet {
  slug: string;
  title: string;
  code: string;
  /** Its input ("": none). */
  stdin?: string;
}

/** The longest title the server takes (snippets/actions.py TITLE_MAX). */
const TITLE_MAX = 200;

/** The title a fork of a snippet starts with: the original's, marked, so that the two never
 *  look alike in the original's list of forks or in a browser tab. An untitled original's forks
 *  are untitled too (their link names them). */
export function forkTitle(title: string): string {
  const own = title.trim();
  if (!own) return "";
  const room = TITLE_MAX - t("{title} (fork)", { title: "" }).length;
  return t("{title} (fork)", { title: own.slice(0, room) });
}

export interface ShownRun {
  id: string;
  /** Its code, when the page knows it (a run picked up again after a reload: not). */
  code: string | null;
  /** Its input, when the page knows it (as `code`); a page without an Input: none. */
  stdin?: string | null;
  /** Its "finished" event has arrived (the stored status may lag behind it). */
  finished: boolean;
}

/** How the shown run compares with what a link would keep: "same" (it finished and ran exactly
 *  this code and input: the link keeps its output), "other input" (this code, another input),
 *  or "other" (another code, or not finished). */
type Match = { run: string | null; why: "same" | "other input" | "other" };

async function matchingRun(run: ShownRun | null, code: string, stdin: string): Promise<Match> {
  if (!run || !run.finished) return { run: null, why: "other" };
  let ran = { code: run.code, stdin: run.stdin === undefined ? "" : run.stdin };
  if (ran.code === null || ran.stdin === null) {
    try {
      const record = await getRun(run.id, { limit: 1 });
      const stored = (record as { stdin?: unknown }).stdin;
      ran = { code: record.code ?? null, stdin: typeof stored === "string" ? stored : "" };
    } catch {
      return { run: null, why: "other" };
    }
  }
  if (ran.code !== code) return { run: null, why: "other" };
  return ran.stdin === stdin ? { run: run.id, why: "same" } : { run: null, why: "other input" };
}

/** The server's message as a sentence: a capital first letter and a full stop (a Chinese one
 *  for a message in Chinese). */
function sentence(text: string): string {
  const said = text.trim();
  if (!said) return said;
  const stop = /[.!?。！？]$/.test(said) ? "" : /[\u3400-\u9fff]/.test(said) ? "。" : ".";
  return said[0].toUpperCase() + said.slice(1) + stop;
}

/** The wait a rate limit's message names, in seconds (web/ratelimit.py's words, in either
 *  language), or null. */
function retryAfter(message: string): number | null {
  const match = /try again in (\d+) s|(\d+) 秒后再试/.exec(message);
  return match ? Number(match[1] ?? match[2]) : null;
}

/** Why the link could not be made, in plain words. */
export function shareError(error: unknown): string {
  if (!(error instanceof ApiError)) return t("Could not create the link: {error}", { error: String(error) });
  switch (error.status) {
    case 0:
      return error.message;
    case 429: {
      const wait = retryAfter(error.message);
      const minutes = wait !== null ? Math.max(1, Math.ceil(wait / 60)) : null;
      return minutes
        ? tn(
            "Too many links were shared from here in the last hour. Try again in {n} minute.",
            "Too many links were shared from here in the last hour. Try again in {n} minutes.",
            minutes,
            { n: minutes },
          )
        : t("Too many links were shared from here in the last hour. Try again later.");
    }
    case 503:
      return t("The playground cannot save links right now. Try again in a few seconds.");
    case 400:
      return sentence(error.message);
    default:
      return t("Could not create the link: {error}", { error: sentence(error.message) });
  }
}

/** The HTML that embeds a snippet in another page. */
export function embedCode(url: string, slug: string, title: string): string {
  const origin = new URL(url, location.href).origin;
  const name = (title || t("JAX Playground snippet {slug}", { slug }))
    .replace(/&/g, "&amp;")
    .replace(/"/g, "&quot;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
  return `<iframe src="${origin}/embed/${slug}" width="100%" height="420" loading="lazy" title="${name}"></iframe>`;
}

function part<T extends HTMLElement>(root: HTMLElement, selector: string): T {
  const found = root.querySelector<T>(selector);
  if (!found) throw new Error(`the share dialog has no ${selector}`);
  return found;
}

/** What the dialog says of the Input a link keeps. */
function withInput(stdin: string): string {
  const lines = inputLines(stdin);
  return tn("The link keeps this code with its input ({n} line).", "The link keeps this code with its input ({n} lines).",
    lines, { n: formatNumber(lines) });
}

export class ShareDialog {
  private readonly form: HTMLFormElement;
  private readonly titleInput: HTMLInputElement;
  private readonly description: HTMLTextAreaElement;
  private readonly runNote: HTMLElement;
  private readonly error: HTMLElement;
  private readonly createButton: HTMLButtonElement;
  private readonly result: HTMLElement;
  private readonly link: HTMLInputElement;
  private readonly linkNote: HTMLElement;
  private readonly forkNote: HTMLElement;
  private readonly embed: HTMLTextAreaElement;
  private readonly embedNote: HTMLElement;
  private opener: HTMLElement | null = null;
  /** The run a link would keep as its output, checked when the dialog opens. */
  private run: Promise<Match> = Promise.resolve({ run: null, why: "other" });
  private busy = false;

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly source: ShareSource,
  ) {
    this.form = part(dialog, "#share-form");
    this.titleInput = part(dialog, "#share-title-input");
    this.description = part(dialog, "#share-description");
    this.runNote = part(dialog, "#share-run-note");
    this.error = part(dialog, "#share-error");
    this.createButton = part(dialog, "#share-create");
    this.result = part(dialog, "#share-result");
    this.link = part(dialog, "#share-link");
    this.linkNote = part(dialog, "#share-link-note");
    this.forkNote = part(dialog, "#share-fork-note");
    this.embed = part(dialog, "#share-embed");
    this.embedNote = part(dialog, "#share-embed-note");

    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.create();
    });
    for (const button of dialog.querySelectorAll<HTMLButtonElement>("[data-close]")) {
      button.addEventListener("click", () => dialog.close());
    }
    // A click on the backdrop (outside the dialog's box) closes it, like Escape.
    dialog.addEventListener("click", (e) => {
      if (e.target !== dialog) return;
      const box = dialog.getBoundingClientRect();
      const inside = e.clientX >= box.left && e.clientX <= box.right && e.clientY >= box.top && e.clientY <= box.bottom;
      if (!inside) dialog.close();
    });
    dialog.addEventListener("close", () => {
      const back = this.opener;
      this.opener = null;
      if (back && back.isConnected) back.focus();
    });
    part<HTMLButtonElement>(dialog, "#share-copy-link").addEventListener("click", () => {
      void this.copy(this.link, this.linkNote, t("Link copied to the clipboard."));
    });
    part<HTMLButtonElement>(dialog, "#share-copy-embed").addEventListener("click", () => {
      void this.copy(this.embed, this.embedNote, t("Embed code copied."));
    });
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  open(): void {
    if (this.dialog.open) return;
    this.opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    this.form.hidden = false;
    this.result.hidden = true;
    this.error.hidden = true;
    this.error.textContent = "";
    this.createButton.disabled = false;
    const code = this.source.getCode();
    const stdin = this.source.getInput?.() ?? "";
    this.prefillTitle(code, stdin);
    this.runNote.textContent = "";
    const shown = this.source.lastRun();
    this.run = matchingRun(shown, code, stdin);
    void this.run.then((match) => {
      if (this.source.getCode() !== code || (this.source.getInput?.() ?? "") !== stdin) return;
      const output = match.run
        ? t("The link keeps the output of your last run of this code.")
        : match.why === "other input"
          ? t("Your last run of this code read another input: the link will show no output until someone runs it.")
          : shown && !shown.finished
            ? t("The run is not finished: the link will show no output until someone runs the code.")
            : t("This code has not been run as it is: the link will show no output until someone runs it.");
      // Chinese sentences follow one another without a space.
      this.runNote.textContent = stdin ? [withInput(stdin), output].join(language === "en" ? " " : "") : output;
    });
    this.dialog.showModal();
    this.titleInput.focus();
  }

  close(): void {
    if (this.dialog.open) this.dialog.close();
  }

  /** On a snippet's page the title starts as the snippet's own for its own code and input, and
   *  marked as a fork's for others; what the person typed is theirs and stays. */
  private prefillTitle(code: string, stdin: string): void {
    const original = this.source.original;
    if (!original) return;
    const typed = this.titleInput.value.trim();
    const own = original.title.trim();
    const fork = forkTitle(original.title);
    const same = code === original.code && stdin === (original.stdin ?? "");
    if (!same && typed === own) this.titleInput.value = fork;
    else if (same && typed === fork && fork !== own) this.titleInput.value = original.title;
  }

  private async create(): Promise<void> {
    if (this.busy) return;
    const code = this.source.getCode();
    if (!code.trim()) {
      this.showError(t("There is no code to share: the editor is empty."));
      return;
    }
    this.busy = true;
    this.createButton.disabled = true;
    this.error.hidden = true;
    const label = this.createButton.textContent;
    this.createButton.textContent = t("Creating…");
    try {
      const stdin = this.source.getInput?.() ?? "";
      const { run } = await this.run;
      const snippet: NewSnippet & { stdin?: string } = {
        code,
        ...(stdin ? { stdin } : {}),
        title: this.titleInput.value.trim(),
        description: this.description.value.trim(),
        device: this.source.getDevice(),
        runtime: this.source.getRuntime?.() ?? null,
        run,
        // The server gives back the same snippet for the same content: a parent only counts for
        // content that differs.
        parent: this.source.original?.slug ?? null,
      };
      const saved = await createSnippet(snippet);
      const original = this.source.original;
      const forked = original !== null && saved.slug !== original.slug;
      if (forked) this.source.onForked?.(code);
      this.show(saved, forked ? original : null);
    } catch (error) {
      this.showError(shareError(error));
    } finally {
      this.busy = false;
      this.createButton.disabled = false;
      this.createButton.textContent = label;
    }
  }

  private showError(text: string): void {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  /** ``forkOf``: the snippet this share forked, if it did. */
  private show(saved: SavedSnippet, forkOf: OriginalSnippet | null): void {
    const url = saved.url;
    this.forkNote.hidden = forkOf === null;
    this.forkNote.textContent = forkOf
      ? t("A fork of “{title}”, with a link of its own: the original keeps its code.", { title: forkOf.title.trim() || forkOf.slug })
      : "";
    this.link.value = url;
    part<HTMLAnchorElement>(this.dialog, "#share-py").href = `${url}.py`;
    part<HTMLAnchorElement>(this.dialog, "#share-ipynb").href = `${url}.ipynb`;
    part<HTMLAnchorElement>(this.dialog, "#share-open").href = url;
    this.embed.value = embedCode(url, saved.slug, this.titleInput.value.trim());
    this.linkNote.textContent = saved.created ? "" : t("This code was shared before: it keeps the same link.");
    this.embedNote.textContent = "";
    this.form.hidden = true;
    this.result.hidden = false;
    this.dialog.dataset.slug = saved.slug;
    void this.copy(this.link, this.linkNote, saved.created ? t("Copied to the clipboard.") : t("Same link as before; copied to the clipboard."));
  }

  private async copy(field: HTMLInputElement | HTMLTextAreaElement, note: HTMLElement, done: string): Promise<void> {
    const ok = await copyText(field.value, field);
    field.focus();
    field.select();
    note.textContent = ok ? done : t("Press {key}+C to copy it (the browser did not allow copying).", { key: isMac() ? "⌘" : "Ctrl" });
    note.dataset.tone = ok ? "ok" : "warning";
  }
}
