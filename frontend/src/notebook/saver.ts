// Nothing a person writes in a notebook is lost: every edit goes to the browser's storage at
// once (anyone's), and a signed-in person's notebook to the server as well, a moment after the
// typing stops (PUT with the version it was based on; a notebook changed elsewhere meanwhile is
// never written over without asking). A signed-in person's new notebook is made on the server
// at its first words, and the page's address becomes its own.
import { csrfToken } from "../api";
import { t } from "../i18n";
import {
  copyKey, dropCopy, hasWriting, newDraftId, readCells, readCopy, serverCells, setLatestDraft, writeCopy, type LocalCell,
  type NotebookData,
} from "./model";

export interface Snapshot {
  title: string;
  cells: LocalCell[];
  runtime: string;
  device: string;
  session: string | null;
}

export type SaveState =
  | { kind: "local" }
  | { kind: "saving" }
  | { kind: "saved" }
  | { kind: "failed"; message: string }
  | { kind: "conflict"; theirs: { title: string; cells: LocalCell[]; version: number } };

const LOCAL_PAUSE_MS = 200;
const SERVER_PAUSE_MS = 1200;

interface Answer {
  status: number;
  data: Record<string, unknown> | null;
}

async function send(method: "POST" | "PUT", url: string, body: unknown): Promise<Answer> {
  const headers: Record<string, string> = { Accept: "application/json", "Content-Type": "application/json" };
  const token = csrfToken();
  if (token) headers["X-CSRFToken"] = token;
  try {
    const response = await fetch(url, { method, headers, body: JSON.stringify(body), credentials: "same-origin" });
    let data: Record<string, unknown> | null = null;
    try {
      data = (await response.json()) as Record<string, unknown>;
    } catch {
      // No JSON (a proxy's page): the status says enough.
    }
    return { status: response.status, data };
  } catch {
    return { status: 0, data: null };
  }
}

function errorText(answer: Answer): string {
  const error = answer.data?.error;
  if (typeof error === "string" && error) return error;
  return answer.status === 0 ? t("the server cannot be reached") : t("the server answered {status}", { status: answer.status });
}

/** Whether a page has anything to keep: a title, or a cell with some text. */
function hasWords(s: Snapshot): boolean {
  return s.cells.some((c) => c.source.trim()) || Boolean(s.title.trim());
}

export class Saver {
  private key: string;
  private localTimer: number | undefined;
  private serverTimer: number | undefined;
  private saving: Promise<void> | null = null;
  private again = false;
  private version: number | null;
  private synced: boolean;
  private state: SaveState;

  constructor(
    private readonly notebook: NotebookData,
    private readonly snapshot: () => Snapshot,
    private readonly onState: (state: SaveState) => void,
    /** The notebook was made on the server: its id. */
    private readonly onCreated: (id: string) => void,
    version: number | null,
    synced: boolean,
    /** A signed-out person's new notebook was given an address: its draft's id. */
    private readonly onDraft: (draft: string) => void = () => {},
  ) {
    this.key = copyKey(notebook.id, notebook.draft);
    // Edits this browser kept that the server has not saved are based on the version they were
    // made on, not the server's now: saved elsewhere since, they meet a conflict, never overwrite.
    const kept = !synced && notebook.id !== null ? readCopy(this.key) : null;
    this.version = kept && !kept.synced && kept.version !== null ? kept.version : version;
    this.synced = synced;
    this.state = this.toServer ? { kind: "saved" } : { kind: "local" };
    window.addEventListener("pagehide", () => this.flushLocal());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") this.flushLocal();
    });
  }

  /** Whether the server keeps this notebook (a signed-in person's own). */
  get toServer(): boolean {
    return this.notebook.editable && this.notebook.signed_in;
  }

  get current(): SaveState {
    return this.state;
  }

  /** Something changed: the browser's copy now, the server's in a moment. */
  changed(): void {
    this.synced = false;
    window.clearTimeout(this.localTimer);
    this.localTimer = window.setTimeout(() => this.flushLocal(), LOCAL_PAUSE_MS);
    if (!this.toServer) return;
    // From the first change on, "Saving…": the save waits for a pause in typing, and "Saved"
    // meanwhile would say that an edit the server has not got yet is safe there.
    if (this.state.kind === "saved" && (this.notebook.save_url || hasWords(this.snapshot()))) {
      this.setState({ kind: "saving" });
    }
    window.clearTimeout(this.serverTimer);
    this.serverTimer = window.setTimeout(() => void this.save(), SERVER_PAUSE_MS);
  }

  /** The browser's copy, now. */
  flushLocal(): void {
    window.clearTimeout(this.localTimer);
    if (!this.notebook.editable) return;
    const s = this.snapshot();
    if (!this.toServer && this.notebook.id === null && this.notebook.draft === null
        && (s.title.trim() || hasWriting(s.cells))) {
      // Its first words: a signed-out person's notebook gets its own address (the draft's id),
      // as a signed-in person's does when the server makes it.
      const draft = newDraftId();
      dropCopy(this.key);
      this.notebook.draft = draft;
      this.key = copyKey(null, draft);
      setLatestDraft(draft);
      writeCopy(this.key, { ...s, savedAt: Date.now(), synced: this.synced, version: this.version });
      this.onDraft(draft);
      return;
    }
    writeCopy(this.key, { ...s, savedAt: Date.now(), synced: this.synced, version: this.version });
  }

  /** Saves to the server now (and again after, when something changed meanwhile). */
  async save(force = false): Promise<void> {
    window.clearTimeout(this.serverTimer);
    if (!this.toServer) return;
    if (this.saving) {
      this.again = true;
      return this.saving;
    }
    if (this.state.kind === "conflict" && !force) return;
    this.saving = this.put().finally(() => {
      this.saving = null;
      if (this.again) {
        this.again = false;
        void this.save();
      }
    });
    return this.saving;
  }

  /** After a conflict: this page's cells are written over the other ones. */
  keepMine(version: number): Promise<void> {
    this.version = version;
    this.setState({ kind: "saving" });
    return this.save(true);
  }

  /** After a conflict: the other cells are taken; this page's stay in the browser aside. */
  tookTheirs(version: number): void {
    const mine = this.snapshot();
    writeCopy(`${this.key}.replaced`, { ...mine, savedAt: Date.now(), synced: false, version: this.version });
    this.version = version;
    this.synced = true;
    this.setState({ kind: "saved" });
    this.flushLocal();
  }

  private async put(): Promise<void> {
    const s = this.snapshot();
    const body = {
      title: s.title,
      cells: serverCells(s.cells),
      runtime: s.runtime,
      device: s.device,
      ...(this.version !== null ? { version: this.version } : {}),
    };
    if (!this.notebook.save_url) {
      // Made on the server at its first words, not for an empty page (nothing to keep: saved).
      if (!hasWords(s)) {
        if (this.state.kind === "saving") this.setState({ kind: "saved" });
        return;
      }
      this.setState({ kind: "saving" });
      const made = await send("POST", "/api/notebooks", body);
      const id = made.data?.id;
      if ((made.status === 200 || made.status === 201) && typeof id === "string") {
        this.notebook.id = id;
        this.notebook.save_url = `/api/notebooks/${encodeURIComponent(id)}`;
        this.version = typeof made.data?.version === "number" ? made.data.version : null;
        // The draft is the notebook now: its copy goes under the notebook's id.
        dropCopy(this.key);
        this.key = copyKey(id);
        this.synced = true;
        this.flushLocal();
        this.setState({ kind: "saved" });
        this.onCreated(id);
      } else {
        this.setState({ kind: "failed", message: errorText(made) });
      }
      return;
    }
    this.setState({ kind: "saving" });
    const answer = await send("PUT", this.notebook.save_url, body);
    if (answer.status === 200) {
      if (typeof answer.data?.version === "number") this.version = answer.data.version;
      this.synced = true;
      this.flushLocal();
      this.setState({ kind: "saved" });
    } else if (answer.status === 409) {
      const theirs = answer.data?.notebook && typeof answer.data.notebook === "object"
        ? (answer.data.notebook as Record<string, unknown>) : answer.data ?? {};
      const version = typeof theirs.version === "number" ? theirs.version
        : typeof answer.data?.version === "number" ? answer.data.version : null;
      const cells = readCells(theirs.cells);
      if (version === null) {
        this.setState({ kind: "failed", message: errorText(answer) });
        return;
      }
      this.setState({ kind: "conflict", theirs: { title: typeof theirs.title === "string" ? theirs.title : s.title, cells, version } });
    } else {
      this.setState({ kind: "failed", message: errorText(answer) });
    }
  }

  private setState(state: SaveState): void {
    this.state = state;
    this.onState(state);
  }
}
