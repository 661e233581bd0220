// What the notebook page knows without the DOM: the notebook the server rendered
// (#notebook-data), its cells, the browser's copy of them, which cells are stale, and the
// notebook as nbformat 4 (the export of a draft).
import { pageData } from "../dom";
import { language, t } from "../i18n";
import { local } from "../storage";

export type CellType = "code" | "markdown";

/** A cell as the server keeps it (notebooks app): `run` is the id of its last run. */
export interface CellData {
  id: string;
  type: CellType;
  source: string;
  run?: string | null;
}

/** What a cell's last run was: when (this page's clock), in which session, of what source, how
 *  it ended, and its number in the session. The browser keeps it with the cells. */
export interface RanMark {
  at: number;
  session: string;
  source: string;
  status: string;
  count: number | null;
}

/** A cell as this page keeps it: the server's fields and its last run. */
export interface LocalCell extends CellData {
  ran?: RanMark | null;
}

export interface SharedLink {
  slug: string;
  url: string;
  ipynb_url: string;
}

export interface NotebookData {
  id: string | null;
  title: string;
  cells: CellData[];
  runtime: string;
  device: string;
  editable: boolean;
  save_url: string | null;
  shared: SharedLink | null;
  signed_in: boolean;
  import_error: string | null;
  /** A signed-out person's draft's id (its address, /notebooks/draft/<id>), or null. */
  draft: string | null;
  /** The server's version of a saved notebook (bumped on each save), when it says. */
  version?: number | null;
  updated_at?: string | null;
}

function text(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

/** A cell id: short, random, stable once made. */
export function newCellId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A cell from anything shaped like one (the server's, an import's, the browser's copy). */
export function readCell(raw: unknown): LocalCell | null {
  if (!raw || typeof raw !== "object") return null;
  const c = raw as Record<string, unknown>;
  const type: CellType = c.type === "markdown" ? "markdown" : "code";
  const source = Array.isArray(c.source) ? c.source.map((s) => text(s)).join("") : text(c.source);
  const cell: LocalCell = { id: text(c.id) || newCellId(), type, source };
  if (typeof c.run === "string" && c.run) cell.run = c.run;
  const ran = c.ran as Record<string, unknown> | null | undefined;
  if (ran && typeof ran === "object" && typeof ran.at === "number" && typeof ran.session === "string") {
    cell.ran = {
      at: ran.at,
      session: ran.session,
      source: text(ran.source),
      status: text(ran.status),
      count: typeof ran.count === "number" ? ran.count : null,
    };
  }
  return cell;
}

export function readCells(raw: unknown): LocalCell[] {
  const cells = Array.isArray(raw) ? raw.map(readCell).filter((c): c is LocalCell => c !== null) : [];
  // Ids are the cells' names on this page (and in the browser's copy): never two alike.
  const seen = new Set<string>();
  for (const cell of cells) {
    if (seen.has(cell.id)) cell.id = newCellId();
    seen.add(cell.id);
  }
  return cells;
}

/** The notebook the server rendered into the page. */
export function readNotebookData(): NotebookData {
  const data = pageData<Partial<NotebookData>>("notebook-data") ?? {};
  const shared = data.shared && typeof data.shared === "object" && typeof data.shared.slug === "string" ? data.shared : null;
  return {
    id: typeof data.id === "string" && data.id ? data.id : null,
    title: text(data.title),
    cells: readCells(data.cells),
    runtime: text(data.runtime),
    device: text(data.device),
    editable: data.editable !== false,
    save_url: typeof data.save_url === "string" && data.save_url ? data.save_url : null,
    shared,
    signed_in: data.signed_in === true,
    import_error: typeof data.import_error === "string" && data.import_error ? data.import_error : null,
    draft: typeof data.draft === "string" && DRAFT_ID.test(data.draft) ? data.draft : null,
    version: typeof data.version === "number" ? data.version : null,
    updated_at: typeof data.updated_at === "string" ? data.updated_at : null,
  };
}

/** The cells as the server takes them. */
export function serverCells(cells: readonly LocalCell[]): CellData[] {
  return cells.map((c) => ({ id: c.id, type: c.type, source: c.source, ...(c.run ? { run: c.run } : {}) }));
}

// ---------------------------------------------------------------------------------------------
// The browser's copy: every edit, at once, for anyone; the page restores it when it is newer
// than what the server rendered.

const COPY_PREFIX = "playground.notebook.";

export interface LocalCopy {
  title: string;
  cells: LocalCell[];
  runtime: string;
  device: string;
  /** When the page wrote it (ms). */
  savedAt: number;
  /** Whether the server holds these cells (a signed-in person's notebook, saved). */
  synced: boolean;
  /** The server's version these cells were based on. */
  version: number | null;
  /** The live session the cells ran in, to pick up again after a reload. */
  session: string | null;
}

/** Which copy: the notebook's id, a signed-out person's draft's, or "new" for one that has no
 *  words yet (nothing to give an address to). */
export function copyKey(id: string | null, draft: string | null = null): string {
  return COPY_PREFIX + (id ?? (draft ? `draft.${draft}` : "new"));
}

// A signed-out person's notebook is kept in their browser only, and gets an address of its own
// at its first words (/notebooks/draft/<id>), as a signed-in person's gets /notebooks/<uuid>: a
// reload, a bookmark or the back button opens that notebook, not whatever is newest. "New
// notebook" (/notebooks/new) opens the draft written last, as it always has.
const LATEST_DRAFT = `${COPY_PREFIX}latest-draft`;
const DRAFT_ID = /^[0-9a-z]{12}$/;

export function newDraftId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => "0123456789abcdefghijklmnopqrstuvwxyz"[b % 36]).join("");
}

/** The draft written last in this browser, when its copy is still there. */
export function latestDraft(): string | null {
  const id = local.get(LATEST_DRAFT);
  return id && DRAFT_ID.test(id) && local.get(copyKey(null, id)) ? id : null;
}

export function setLatestDraft(id: string): void {
  local.set(LATEST_DRAFT, id);
}

export function draftUrl(id: string): string {
  return `/notebooks/draft/${id}`;
}

export function readCopy(key: string): LocalCopy | null {
  const raw = local.get(key);
  if (!raw) return null;
  try {
    const data = JSON.parse(raw) as Partial<LocalCopy>;
    if (!data || !Array.isArray(data.cells)) return null;
    return {
      title: text(data.title),
      cells: readCells(data.cells),
      runtime: text(data.runtime),
      device: text(data.device),
      savedAt: typeof data.savedAt === "number" ? data.savedAt : 0,
      synced: data.synced === true,
      version: typeof data.version === "number" ? data.version : null,
      session: typeof data.session === "string" && data.session ? data.session : null,
    };
  } catch {
    return null;
  }
}

export function writeCopy(key: string, copy: LocalCopy): void {
  local.set(key, JSON.stringify(copy));
}

export function dropCopy(key: string): void {
  local.set(key, null);
}

/** Whether the cells hold anything a person wrote. */
export function hasWriting(cells: readonly CellData[]): boolean {
  return cells.some((c) => c.source.trim() !== "");
}

/** Two lists of cells say the same (ids, types and sources). */
export function sameCells(a: readonly CellData[], b: readonly CellData[]): boolean {
  return a.length === b.length && a.every((c, i) => c.id === b[i].id && c.type === b[i].type && c.source === b[i].source);
}

// ---------------------------------------------------------------------------------------------
// Stale tracking: which names each code cell defines and uses (POST /api/cells/names), and from
// that, which cells ran on inputs that have changed since.

export interface CellNames {
  defines: string[];
  uses: string[];
}

/** Why a cell is stale; null when it is not. Its code changed, the session it ran in ended, or
 *  a cell it reads from (`cell`, 0-based, and the names it reads of it) is stale itself, has not
 *  run since, or ran again after it. */
export type Staleness =
  | { why: "edited" }
  | { why: "ended" }
  | { why: "stale" | "not-run" | "ran-again"; cell: number; names: string[] }
  | null;

/** What goes between the items of a list in the page's language ("x, y", "x、y"). */
export const LIST_SEPARATOR = language === "zh-hans" ? "、" : ", ";

/** Names one after another, as the page's language lists them. */
export function nameList(names: readonly string[]): string {
  return names.join(LIST_SEPARATOR);
}

/** Why a cell is stale, in words a person reads. `names` fills the sentence's `{names}` (the
 *  names listed, unless a caller keeps the placeholder to put them in as code). */
export function staleText(stale: NonNullable<Staleness>, names?: string): string {
  if (stale.why === "edited") return t("edited since it ran");
  if (stale.why === "ended") return t("ran in a session that has ended");
  const params = { n: stale.cell + 1, names: names ?? nameList(stale.names) };
  const some = stale.names.length > 0;
  if (stale.why === "stale") return some ? t("cell {n} ({names}) is stale", params) : t("cell {n} is stale", params);
  if (stale.why === "not-run") {
    return some ? t("cell {n} ({names}) has not run since", params) : t("cell {n} has not run since", params);
  }
  return some ? t("cell {n} ({names}) ran again after it", params) : t("cell {n} ran again after it", params);
}

export interface CellState {
  /** The cell as it is now, and what it ran. */
  cell: LocalCell;
  /** Its names, or null while unknown (then every code cell above counts as its upstream). */
  names: CellNames | null;
}

/** The code cells above `index` it reads from: for each name it uses, the nearest cell above
 *  that defines it (every code cell above while its names are unknown). Indexes into `cells`. */
export function upstreamOf(cells: readonly CellState[], index: number): number[] {
  const names = cells[index].names;
  const above: number[] = [];
  for (let i = index - 1; i >= 0; i--) if (cells[i].cell.type === "code") above.push(i);
  if (!names) return above.reverse();
  const found = new Set<number>();
  for (const name of names.uses) {
    const from = above.find((i) => cells[i].names === null || cells[i].names!.defines.includes(name));
    if (from !== undefined) found.add(from);
  }
  return [...found].sort((a, b) => a - b);
}

/** The names `cells[index]` reads from `cells[from]` (all it uses when names are unknown). */
export function namesFrom(cells: readonly CellState[], index: number, from: number): string[] {
  const uses = cells[index].names?.uses ?? [];
  const defines = cells[from].names?.defines;
  return defines ? uses.filter((n) => defines.includes(n)) : [];
}

/** Each cell's staleness, in order. A cell is stale when it ran and, since: its code changed,
 *  the session it ran in is not the live one (restarted, stopped), or a cell it reads from was
 *  edited, re-run or is stale itself. A cell that never ran is not stale (it has nothing old). */
export function staleness(cells: readonly CellState[], session: string | null): Staleness[] {
  const out: Staleness[] = [];
  cells.forEach((state, index) => {
    const { cell } = state;
    const ran = cell.ran;
    if (cell.type !== "code" || !ran) {
      out.push(null);
      return;
    }
    if (cell.source !== ran.source) {
      out.push({ why: "edited" });
      return;
    }
    if (ran.session !== session) {
      out.push({ why: "ended" });
      return;
    }
    for (const from of upstreamOf(cells, index)) {
      const up = cells[from].cell;
      const names = namesFrom(cells, index, from);
      if (out[from]) {
        out.push({ why: "stale", cell: from, names });
        return;
      }
      if (!up.ran || up.ran.session !== session) {
        // An upstream cell that never ran here: what this cell read came from elsewhere.
        if (up.source.trim()) {
          out.push({ why: "not-run", cell: from, names });
          return;
        }
        continue;
      }
      if (up.ran.at > ran.at) {
        out.push({ why: "ran-again", cell: from, names });
        return;
      }
    }
    out.push(null);
  });
  return out;
}

/** Before running `cells[index]` on its own: the cells above it reads from, directly or through
 *  others, that are stale or have not run in this session (those it would read old values, or
 *  none, from), in order. */
export function blockersOf(cells: readonly CellState[], index: number, stale: readonly Staleness[], session: string | null): number[] {
  const seen = new Set<number>();
  const walk = (i: number) => {
    for (const from of upstreamOf(cells, i)) {
      if (seen.has(from)) continue;
      seen.add(from);
      walk(from);
    }
  };
  walk(index);
  return [...seen]
    .filter((i) => {
      const c = cells[i].cell;
      if (!c.source.trim()) return false;
      return stale[i] !== null || !c.ran || c.ran.session !== session || c.ran.status !== "succeeded";
    })
    .sort((a, b) => a - b);
}

/** Why a blocker (``blockersOf``) holds a cell back, truthfully: stale (``staleness`` says why),
 *  ran in this session and failed (or was stopped, timed out: did not succeed), or has not run
 *  in this session at all. */
export type HeldBack = "stale" | "failed" | "not-run";

export function heldBackBy(cell: LocalCell, staleness: Staleness, session: string | null): HeldBack {
  if (staleness) return "stale";
  if (cell.ran && cell.ran.session === session && cell.ran.status !== "succeeded") return "failed";
  return "not-run";
}

// ---------------------------------------------------------------------------------------------
// nbformat 4: the export of a notebook the server does not hold.

export interface CellOutput {
  stream: "stdout" | "stderr";
  text: string;
}

export interface CellError {
  ename: string;
  evalue: string;
  traceback: string;
}

function lines(source: string): string[] {
  return source.split(/(?<=\n)/).filter((l) => l !== "");
}

export function toIpynb(
  title: string,
  cells: readonly LocalCell[],
  outputs: (id: string) => { streams: CellOutput[]; error: CellError | null },
): string {
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: "python3", display_name: "Python 3", language: "python" },
      language_info: { name: "python" },
      title,
    },
    cells: cells.map((cell) => {
      if (cell.type === "markdown") return { cell_type: "markdown", id: cell.id, metadata: {}, source: lines(cell.source) };
      const { streams, error } = outputs(cell.id);
      const out: object[] = streams.map((s) => ({ output_type: "stream", name: s.stream, text: lines(s.text) }));
      if (error) out.push({ output_type: "error", ename: error.ename, evalue: error.evalue, traceback: error.traceback.split("\n") });
      return {
        cell_type: "code",
        id: cell.id,
        metadata: {},
        execution_count: cell.ran?.count ?? null,
        source: lines(cell.source),
        outputs: out,
      };
    }),
  };
  return JSON.stringify(nb, null, 1) + "\n";
}
