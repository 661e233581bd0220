// Drafts: the code a person is working on, one per document they edited: their own code
// ("own"), each example ("example:<slug>") and each shared snippet ("snippet:<slug>"). Opening
// another document never overwrites one; each is listed in the Examples menu and restorable
// after any number of reloads.
//
// They live in localStorage; for a signed-in person they also go to the server
// (/api/me/drafts), so another browser finds them. A draft changed here and not yet on the
// server is "dirty"; one that came from (or reached) the server and is gone from it was deleted
// in another browser. A document's Input (its run's standard input) is kept beside its draft, in
// this browser only (Inputs, below).
import { ApiError, deleteDraft, listDrafts, saveDraft } from "./api";
import { KEYS, local } from "./storage";

export interface Draft {
  key: string;
  /** What a person calls it: "Your code", an example's or a snippet's title. */
  title: string;
  code: string;
  /** When it last changed (ms since the epoch, this browser's clock). */
  updated: number;
  /** Changed here since the server last had it (signed-in people only). */
  dirty?: boolean;
}

/** The code a Reset replaced ("reset:<key>"): kept in this browser only (the server keeps the
 *  documents' own drafts). */
export const RESET_PREFIX = "reset:";

function localOnly(key: string): boolean {
  return key.startsWith(RESET_PREFIX);
}

/** How long typing pauses before a change goes to the server. */
const SYNC_AFTER_MS = 1500;

export class Drafts {
  private drafts: Record<string, Draft>;
  private readonly timers = new Map<string, number>();
  private readonly listeners: (() => void)[] = [];

  /** ``signedIn``: whether drafts also go to the server. */
  constructor(readonly signedIn: boolean) {
    this.drafts = readAll();
  }

  /** Newest first. */
  list(): Draft[] {
    return Object.values(this.drafts).sort((a, b) => b.updated - a.updated);
  }

  get(key: string): Draft | null {
    return this.drafts[key] ?? null;
  }

  /** Called after any change, here or from the server. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  save(key: string, title: string, code: string): void {
    const before = this.drafts[key];
    if (before && before.code === code && before.title === title) return;
    this.drafts[key] = { key, title, code, updated: Date.now(), dirty: (this.signedIn && !localOnly(key)) || undefined };
    this.write();
    this.push(key);
  }

  remove(key: string): void {
    if (!(key in this.drafts)) return;
    delete this.drafts[key];
    this.write();
    window.clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    if (this.signedIn && !localOnly(key)) {
      deleteDraft(key).catch((error: unknown) => {
        if (!(error instanceof ApiError && error.status === 404)) console.warn("draft not deleted on the server", error);
      });
    }
  }

  /** Brings this browser and the server together: the server's drafts replace unchanged ones
   *  here, and what changed here goes there. Resolves to whether anything here changed. */
  async pull(): Promise<boolean> {
    if (!this.signedIn) return false;
    let remote;
    try {
      remote = await listDrafts();
    } catch (error) {
      console.warn("drafts not loaded from the server", error);
      return false;
    }
    let changed = false;
    const onServer = new Set<string>();
    for (const draft of remote) {
      onServer.add(draft.key);
      const mine = this.drafts[draft.key];
      if (mine?.dirty) continue;
      if (mine && mine.code === draft.code && mine.title === draft.title) continue;
      const updated = Date.parse(draft.updated_at);
      this.drafts[draft.key] = { key: draft.key, title: draft.title, code: draft.code,
                                 updated: Number.isFinite(updated) ? updated : Date.now() };
      changed = true;
    }
    for (const key of Object.keys(this.drafts)) {
      if (onServer.has(key) || localOnly(key)) continue;
      if (this.drafts[key].dirty) this.push(key, 0);
      else {
        // It was on the server and is gone: deleted from another browser.
        delete this.drafts[key];
        changed = true;
      }
    }
    for (const key of onServer) if (this.drafts[key]?.dirty) this.push(key, 0);
    if (changed) this.write();
    return changed;
  }

  private push(key: string, after = SYNC_AFTER_MS): void {
    if (!this.signedIn || localOnly(key)) return;
    window.clearTimeout(this.timers.get(key));
    this.timers.set(key, window.setTimeout(() => {
      this.timers.delete(key);
      const draft = this.drafts[key];
      if (!draft?.dirty) return;
      const sent = draft.code;
      saveDraft(key, draft.code, draft.title).then(
        () => {
          // Unless it changed again while the request was out.
          const now = this.drafts[key];
          if (now && now.code === sent) {
            delete now.dirty;
            this.write(false);
          }
        },
        (error: unknown) => {
          // Too long for the server (413) stays in this browser; anything else tries again later.
          if (error instanceof ApiError && error.status === 413) return;
          console.warn("draft not saved on the server", error);
        },
      );
    }, after));
  }

  private write(notify = true): void {
    local.set(KEYS.drafts, JSON.stringify(this.drafts));
    if (notify) for (const listener of this.listeners) listener();
  }
}

function readAll(): Record<string, Draft> {
  let drafts: Record<string, Draft> = {};
  try {
    const data = JSON.parse(local.get(KEYS.drafts) ?? "{}") as unknown;
    if (data && typeof data === "object") {
      for (const [key, d] of Object.entries(data as Record<string, Partial<Draft>>)) {
        if (d && typeof d.code === "string") {
          drafts[key] = { key, title: typeof d.title === "string" ? d.title : key, code: d.code,
                          updated: typeof d.updated === "number" ? d.updated : 0, dirty: d.dirty === true || undefined };
        }
      }
    }
  } catch {
    drafts = {};
  }
  return drafts;
}

/** Where each document's Input (the run's standard input, stdin.ts) is kept: apart from the
 *  drafts, whose code goes to the server (which keeps no input). */
const INPUTS_KEY = "playground.inputs";
/** Inputs kept, the newest: each may be a few hundred KiB, and localStorage holds a few MiB. */
const INPUTS_KEPT = 20;
/** How long typing in an Input pauses before it is written. */
const INPUTS_WRITE_AFTER_MS = 300;

/**
 * The Input a person typed for each document they edited it in (the keys are the drafts': "own",
 * "example:<slug>", "snippet:<slug>", "assignment:<id>"), in this browser, beside the document's
 * draft: a reload, or opening the document again, shows it as it was left. An input that is the
 * document's own again (none, or a snippet's) is not kept.
 */
export class Inputs {
  private inputs: Record<string, { text: string; updated: number }> = readInputs();
  private timer: number | undefined;

  constructor() {
    // Written a moment after typing pauses (they may be large), and before the page goes.
    window.addEventListener("pagehide", () => this.write());
  }

  /** The input kept for `key`, or null when none is (the document's own then). */
  get(key: string): string | null {
    return this.inputs[key]?.text ?? null;
  }

  /** Keeps `text` as `key`'s input; `base`, the document's own input, is not kept. */
  save(key: string, text: string, base = ""): void {
    if (text === base) {
      if (!(key in this.inputs)) return;
      delete this.inputs[key];
    } else {
      this.inputs[key] = { text, updated: Date.now() };
    }
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => this.write(), INPUTS_WRITE_AFTER_MS);
  }

  private write(): void {
    if (this.timer === undefined) return;
    window.clearTimeout(this.timer);
    this.timer = undefined;
    const newest = Object.entries(this.inputs).sort(([, a], [, b]) => b.updated - a.updated);
    this.inputs = Object.fromEntries(newest.slice(0, INPUTS_KEPT));
    local.set(INPUTS_KEY, JSON.stringify(this.inputs));
  }
}

function readInputs(): Record<string, { text: string; updated: number }> {
  const inputs: Record<string, { text: string; updated: number }> = {};
  try {
    const data = JSON.parse(local.get(INPUTS_KEY) ?? "{}") as unknown;
    if (data && typeof data === "object") {
      for (const [key, d] of Object.entries(data as Record<string, { text?: unknown; updated?: unknown }>)) {
        if (d && typeof d.text === "string") inputs[key] = { text: d.text, updated: typeof d.updated === "number" ? d.updated : 0 };
      }
    }
  } catch {
    // A broken entry loses the inputs, never the page.
  }
  return inputs;
}
