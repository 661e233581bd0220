// A notebook's ways in and out: Share (an immutable link with each cell's last run as its
// output), Import (.ipynb, read by the server), Export (.ipynb: the server's for a saved or shared
// notebook, else made here) and Fork (of a shared notebook).
import { ApiError, csrfToken, request } from "../api";
import { copyText } from "../dom";
import { t } from "../i18n";
import { shareError } from "../share";
import { readCells, type CellData, type LocalCell, type SharedLink } from "./model";

export interface ShareCell {
  type: CellData["type"];
  source: string;
  run?: string;
}

export interface ShareBody {
  title: string;
  cells: ShareCell[];
  runtime: string;
  device: string;
}

function part<T extends HTMLElement>(root: HTMLElement, selector: string): T {
  const found = root.querySelector<T>(selector);
  if (!found) throw new Error(`the share dialog has no ${selector}`);
  return found;
}

/** The Share dialog: what the link will hold, Create link, then the link (copied at once). */
export class NotebookShareDialog {
  private readonly note: HTMLElement;
  private readonly error: HTMLElement;
  private readonly result: HTMLElement;
  private readonly link: HTMLInputElement;
  private readonly linkNote: HTMLElement;
  private readonly open: HTMLAnchorElement;
  private readonly ipynb: HTMLAnchorElement;
  private readonly create: HTMLButtonElement;

  constructor(private readonly dialog: HTMLDialogElement, private readonly notebookBody: () => ShareBody) {
    this.note = part(dialog, "#share-run-note");
    this.error = part(dialog, "#share-error");
    this.result = part(dialog, "#share-result");
    this.link = part(dialog, "#share-link");
    this.linkNote = part(dialog, "#share-link-note");
    this.open = part(dialog, "#share-open");
    this.ipynb = part(dialog, "#share-ipynb");
    this.create = part(dialog, "#share-create");
    for (const close of dialog.querySelectorAll<HTMLElement>("[data-close]")) close.addEventListener("click", () => dialog.close());
    this.create.addEventListener("click", () => void this.share());
    part<HTMLButtonElement>(dialog, "#share-copy-link").addEventListener("click", () => void this.copy());
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  show(): void {
    const body = this.body();
    const code = body.cells.filter((c) => c.type === "code" && c.source.trim());
    const withRun = code.filter((c) => c.run).length;
    this.note.textContent = code.length === 0
      ? t("No code cell yet.")
      : withRun === code.length
        ? t("Every code cell's output goes with it ({n}).", { n: withRun })
        : t("{n} of {total} code cells go with their output: a cell edited since it ran, or never run, goes without.",
          { n: withRun, total: code.length });
    this.error.hidden = true;
    this.result.hidden = true;
    this.create.hidden = false;
    this.dialog.showModal();
  }

  /** What is shared: the notebook without the empty cells at its end (the one Shift+Enter adds). */
  private body(): ShareBody {
    const body = this.notebookBody();
    const cells = [...body.cells];
    while (cells.length > 1 && !cells[cells.length - 1].source.trim()) cells.pop();
    return { ...body, cells };
  }

  private async share(): Promise<void> {
    this.create.disabled = true;
    this.error.hidden = true;
    try {
      const shared = await request<SharedLink>("POST", "/api/notebooks/share", this.body());
      const url = new URL(shared.url, location.href).toString();
      this.link.value = url;
      this.open.href = url;
      this.ipynb.href = shared.ipynb_url;
      this.result.hidden = false;
      this.create.hidden = true;
      this.link.select();
      await this.copy();
    } catch (error) {
      this.error.textContent = shareError(error);
      this.error.hidden = false;
    } finally {
      this.create.disabled = false;
    }
  }

  private async copy(): Promise<void> {
    const ok = await copyText(this.link.value, this.link);
    this.linkNote.textContent = ok ? t("Copied to the clipboard.") : t("Select the link and copy it.");
  }
}

/** A .ipynb file read by the server: its title and cells (not saved). */
export async function importFile(file: File): Promise<{ title: string; cells: LocalCell[] }> {
  const form = new FormData();
  form.append("file", file);
  const headers: Record<string, string> = { Accept: "application/json" };
  const token = csrfToken();
  if (token) headers["X-CSRFToken"] = token;
  let response: Response;
  try {
    response = await fetch("/api/notebooks/import", { method: "POST", body: form, headers, credentials: "same-origin" });
  } catch {
    throw new ApiError(0, t("Cannot reach the server. Check your connection and try again."));
  }
  let data: Record<string, unknown> | null = null;
  try {
    data = (await response.json()) as Record<string, unknown>;
  } catch {
    // Said below.
  }
  if (!response.ok || !data) {
    const message = typeof data?.error === "string" ? data.error : t("The server answered {status}.", { status: response.status });
    throw new ApiError(response.status, message);
  }
  return { title: typeof data.title === "string" ? data.title : file.name.replace(/\.ipynb$/i, ""), cells: readCells(data.cells) };
}

/** Fork: a new notebook of one's own (signed in: its page), or a draft in this browser. */
export async function forkShared(slug: string): Promise<{ url: string } | { title: string; cells: LocalCell[] }> {
  const answer = await request<Record<string, unknown>>("POST", `/api/notebooks/shared/${encodeURIComponent(slug)}/fork`);
  if (typeof answer.url === "string" && typeof answer.id === "string") return { url: answer.url };
  return { title: typeof answer.title === "string" ? answer.title : "", cells: readCells(answer.cells) };
}

/** Saves `text` as a file the browser downloads. */
export function downloadFile(text: string, name: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A file name from a title: "My notebook.ipynb". */
export function fileName(title: string): string {
  const base = title.trim().replace(/[\\/:*?"<>|]+/g, "-").slice(0, 80);
  return `${base || "notebook"}.ipynb`;
}
