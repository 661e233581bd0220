// The notebook: its cells in order, the selected one and command mode (Jupyter's keys), runs
// (one cell at a time in the live session, the rest queued here in order), which cells are
// stale, the session's state and Restore, and saving. The page's entry (pages/notebook.ts) makes
// one and binds the toolbar to it.
import { ApiError, formatCode, request } from "../api";
import { clampFontSize, DEFAULT_FONT_SIZE, type EditorTheme } from "../editor";
import type { RunEvent } from "../events";
import { num } from "../format";
import { language, t, tc } from "../i18n";
import { monaco } from "../monaco";
import type { RunPhase } from "../run";
import { KEYS, local, session as tabStorage } from "../storage";
import { currentTheme } from "../theme";
import { Cell, codeNames, compose, staleParts, type CellHost } from "./cell";
import {
  blockersOf, heldBackBy, LIST_SEPARATOR, newCellId, staleness, type CellNames, type CellState, type CellType,
  type LocalCell, type Staleness,
} from "./model";
import { LiveSession, leaseText, stopReason, type SessionView } from "./session";

export interface NotebookOptions {
  list: HTMLElement;
  cells: LocalCell[];
  readOnly: boolean;
  /** Where each cell keeps the run it shows, for this tab (sessionStorage). */
  runKeyPrefix: string;
  workerUrl: string;
  where(): { runtime: string | null; device: string | null };
  /** The cells, their order or what they ran changed: save. */
  changed(): void;
  /** The session's state, in words, for the toolbar. */
  onSession(view: SessionLine): void;
  /** Something to tell the person (a cell deleted, with Undo; a refusal). */
  notify(text: string, tone: "muted" | "warning" | "error", action?: { label: string; run(): void }): void;
  /** How many cells are stale, and whether a run is under way (for the toolbar's buttons). */
  onCounts(stale: number, busy: boolean): void;
  /** Whether a cell's run is profiled (Profile, beside Run all). */
  profile?(): boolean;
}

/** The session's line in the toolbar. */
export interface SessionLine {
  phase: "none" | "starting" | "idle" | "running" | "stopped" | "failed" | "restoring";
  text: string;
  /** The text as shown, where names in it are shown as code (else the text itself). */
  content?: (Node | string)[];
  /** Restore is offered (a stopped session with cells that had run). */
  restorable: boolean;
  progress: { done: number; of: number } | null;
}

type Then = "stay" | "advance" | "insert";

interface QueueItem {
  cell: Cell;
}

const NAMES_PAUSE_MS = 350;
const DOUBLE_KEY_MS = 600;

export class Notebook implements CellHost {
  readonly cells: Cell[] = [];

  codeAbove(cell: Cell): string {
    const index = this.cells.indexOf(cell);
    return this.cells.slice(0, Math.max(index, 0)).filter((c) => c.type === "code")
      .map((c) => (c.source.endsWith("\n") ? c.source : `${c.source}\n`)).join("");
  }
  readonly readOnly: boolean;
  readonly workerUrl: string;
  readonly session: LiveSession;
  private active: Cell | null = null;
  private queue: QueueItem[] = [];
  private running: Cell | null = null;
  private waiters = new Map<Cell, () => void>();
  /** Each cell's names, by the code they were read from. */
  private namesByCode = new Map<string, CellNames>();
  private lastNames = new Map<string, CellNames>();
  private namesTimer: number | undefined;
  private namesBroken = false;
  private stale: Staleness[] = [];
  private lastD = 0;
  private removed: { data: LocalCell; index: number }[] = [];
  private restoring: { done: number; of: number } | null = null;
  private restoreFailed: string | null = null;
  /** A run's start, kept until it ends: what it ran, in which session, when. */
  private starts = new Map<Cell, { at: number; source: string; session: string }>();
  private finishes = new Map<Cell, string>();
  private counts = new Map<Cell, number | null>();
  private runIds = new Map<Cell, string>();
  private sessionView: SessionView = { phase: "none" };
  private size = clampFontSize(Number(local.get(KEYS.fontSize) ?? DEFAULT_FONT_SIZE));

  constructor(private readonly options: NotebookOptions) {
    this.readOnly = options.readOnly;
    this.workerUrl = options.workerUrl;
    this.session = new LiveSession(options.where, (view) => {
      this.sessionView = view;
      this.refresh();
    });
    for (const data of options.cells) this.cells.push(new Cell(data, this));
    if (!this.cells.length && !this.readOnly) this.cells.push(new Cell({ id: newCellId(), type: "code", source: "" }, this));
    options.list.replaceChildren(...this.cells.map((c) => c.element));
    this.select(this.cells[0] ?? null);
    options.list.addEventListener("keydown", (e) => this.onKey(e));
    if (!this.readOnly) this.watchProblems();
    this.refresh();
    this.askNames();
  }

  // ---- CellHost ------------------------------------------------------------------------------

  theme(): EditorTheme {
    return currentTheme();
  }

  fontSize(): number {
    return this.size;
  }

  setFontSize(size: number): void {
    this.size = clampFontSize(size);
    local.set(KEYS.fontSize, String(this.size));
    for (const cell of this.cells) cell.setFontSize(this.size);
  }

  runKey(cell: Cell): string {
    return `${this.options.runKeyPrefix}.${cell.id}`;
  }

  format(code: string): Promise<string> {
    return formatCode(code);
  }

  edited(cell: Cell): void {
    cell.hideNotice();
    this.options.changed();
    this.refresh();
    this.askNames();
  }

  focused(cell: Cell): void {
    if (this.active !== cell) this.select(cell);
  }

  leave(cell: Cell): void {
    this.select(cell);
    cell.focusCell();
  }

  run(cell: Cell, then: Then): void {
    if (cell.type === "code" && !this.readOnly) {
      const index = this.cells.indexOf(cell);
      const blockers = blockersOf(this.states(), index, this.stale, this.session.id)
        .filter((i) => !this.isQueued(this.cells[i]) && this.cells[i] !== this.running);
      if (blockers.length) {
        this.warnUpstream(cell, blockers, then);
        return;
      }
      this.enqueue([cell], false);
    }
    this.after(cell, then);
  }

  cancel(cell: Cell): void {
    if (this.isQueued(cell)) {
      this.queue = this.queue.filter((q) => q.cell !== cell);
      cell.setQueued(false);
      this.refresh();
      return;
    }
    void cell.session.cancel();
  }

  move(cell: Cell, by: -1 | 1): void {
    const from = this.cells.indexOf(cell);
    const to = from + by;
    if (from < 0 || to < 0 || to >= this.cells.length) return;
    const focusWasIn = cell.element.contains(document.activeElement);
    const editing = cell.isEditing;
    this.cells.splice(from, 1);
    this.cells.splice(to, 0, cell);
    if (by < 0) this.cells[to + 1].element.before(cell.element);
    else this.cells[to - 1].element.after(cell.element);
    this.options.changed();
    this.refresh();
    this.askNames();
    if (editing) cell.edit();
    else if (focusWasIn) cell.focusCell();
  }

  remove(cell: Cell): void {
    const index = this.cells.indexOf(cell);
    if (index < 0 || this.readOnly) return;
    if (cell.phase !== "idle") void cell.session.cancel();
    if (this.isQueued(cell)) this.cancel(cell);
    this.cells.splice(index, 1);
    cell.element.remove();
    this.removed.push({ data: { ...cell.data, source: cell.source }, index });
    cell.dispose();
    tabStorage.set(this.runKey(cell), null);
    if (!this.cells.length) this.insert(0, "code");
    const next = this.cells[Math.min(index, this.cells.length - 1)];
    this.select(next);
    next.focusCell();
    this.options.changed();
    this.refresh();
    this.askNames();
    this.options.notify(t("Cell {n} deleted.", { n: index + 1 }), "muted", { label: t("Undo"), run: () => this.undoRemove() });
  }

  convert(cell: Cell, type: CellType): void {
    if (cell.type === type || this.readOnly) return;
    if (cell.phase !== "idle") void cell.session.cancel();
    tabStorage.set(this.runKey(cell), null);
    cell.setType(type);
    this.options.changed();
    this.refresh();
    this.askNames();
    cell.focusCell();
  }

  phase(cell: Cell, phase: RunPhase): void {
    if (phase === "submitting") {
      this.finishes.delete(cell);
    }
    if (phase === "idle") {
      const start = this.starts.get(cell);
      const status = this.finishes.get(cell);
      this.starts.delete(cell);
      if (start && status) {
        cell.data.ran = { at: start.at, session: start.session, source: start.source, status, count: this.counts.get(cell) ?? null };
        const run = this.runIds.get(cell);
        if (run) cell.data.run = run;
        this.options.changed();
      }
      cell.showCount();
      const wake = this.waiters.get(cell);
      this.waiters.delete(cell);
      wake?.();
    }
    this.refresh();
  }

  event(cell: Cell, event: RunEvent): void {
    if (event.type === "started") {
      const count = num((event as unknown as Record<string, unknown>).cell);
      this.counts.set(cell, count);
      if (cell.data.ran && this.starts.has(cell)) cell.data.ran = { ...cell.data.ran, count };
    } else if (event.type === "finished") {
      this.finishes.set(cell, event.status);
    }
  }

  // ---- The list of cells ---------------------------------------------------------------------

  /** Adds a cell at `index`: the new cell. */
  insert(index: number, type: CellType, source = ""): Cell {
    const cell = new Cell({ id: newCellId(), type, source }, this);
    const at = Math.max(0, Math.min(index, this.cells.length));
    const before = this.cells[at];
    this.cells.splice(at, 0, cell);
    if (before) before.element.before(cell.element);
    else this.options.list.append(cell.element);
    this.options.changed();
    this.refresh();
    return cell;
  }

  /** Replaces every cell (an import, the other copy of a conflict). */
  replaceCells(cells: LocalCell[]): void {
    for (const cell of this.cells) {
      if (cell.phase !== "idle") void cell.session.cancel();
      cell.dispose();
    }
    this.queue = [];
    this.cells.splice(0, this.cells.length, ...cells.map((data) => new Cell(data, this)));
    if (!this.cells.length) this.cells.push(new Cell({ id: newCellId(), type: "code", source: "" }, this));
    this.options.list.replaceChildren(...this.cells.map((c) => c.element));
    this.select(this.cells[0]);
    this.options.changed();
    this.refresh();
    this.askNames();
  }

  select(cell: Cell | null): void {
    this.active = cell;
    for (const c of this.cells) c.setActive(c === cell);
  }

  get selected(): Cell | null {
    return this.active;
  }

  /** The cells as the browser keeps them. */
  data(): LocalCell[] {
    return this.cells.map((c) => ({ ...c.data, source: c.source }));
  }

  private undoRemove(): void {
    const last = this.removed.pop();
    if (!last) return;
    const cell = new Cell(last.data, this);
    const at = Math.min(last.index, this.cells.length);
    const before = this.cells[at];
    this.cells.splice(at, 0, cell);
    if (before) before.element.before(cell.element);
    else this.options.list.append(cell.element);
    this.select(cell);
    cell.focusCell();
    this.options.changed();
    this.refresh();
    this.askNames();
  }

  /** After a run key: stay, go on to the next cell (a new one at the end), or add one below. */
  private after(cell: Cell, then: Then): void {
    if (then === "stay") return;
    const index = this.cells.indexOf(cell);
    let next = then === "advance" ? this.cells[index + 1] : undefined;
    if (!next && !this.readOnly) next = this.insert(index + 1, "code");
    if (!next) return;
    this.select(next);
    if (next.type === "code" || !next.source.trim()) next.edit();
    else next.focusCell();
  }

  // ---- Command mode --------------------------------------------------------------------------

  private onKey(e: KeyboardEvent): void {
    const cell = this.active;
    if (!cell || e.target !== cell.element) return;
    if (e.ctrlKey || e.metaKey || e.altKey) {
      if (e.key === "Enter") {
        e.preventDefault();
        this.run(cell, e.altKey ? "insert" : "stay");
      }
      return;
    }
    const index = this.cells.indexOf(cell);
    const go = (to: number) => {
      const target = this.cells[Math.max(0, Math.min(to, this.cells.length - 1))];
      if (!target) return;
      this.select(target);
      target.focusCell();
    };
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (key !== "d") this.lastD = 0;
    let handled = true;
    if (key === "Enter" && e.shiftKey) this.run(cell, "advance");
    else if (key === "Enter") cell.edit();
    else if (key === "ArrowUp" || key === "k") go(index - 1);
    else if (key === "ArrowDown" || key === "j") go(index + 1);
    else if (this.readOnly) handled = false;
    else if (key === "a") this.insertAndFocus(index);
    else if (key === "b") this.insertAndFocus(index + 1);
    else if (key === "m") this.convert(cell, "markdown");
    else if (key === "y") this.convert(cell, "code");
    else if (key === "z") this.undoRemove();
    else if (key === "d") {
      const now = performance.now();
      if (now - this.lastD < DOUBLE_KEY_MS) {
        this.lastD = 0;
        this.remove(cell);
      } else {
        this.lastD = now;
      }
    } else handled = false;
    if (handled) e.preventDefault();
  }

  private insertAndFocus(index: number): void {
    const cell = this.insert(index, "code");
    this.select(cell);
    cell.focusCell();
  }

  // ---- Runs ----------------------------------------------------------------------------------

  private isQueued(cell: Cell): boolean {
    return this.queue.some((q) => q.cell === cell);
  }

  /** Runs `cells` one after the other, after what is queued; `stopOnFailure`: a cell that fails
   *  drops those queued after it (Run all, Run stale, a restore). */
  enqueue(cells: Cell[], stopOnFailure: boolean): Promise<boolean> {
    const fresh = cells.filter((c) => c.type === "code" && c !== this.running && !this.isQueued(c));
    for (const cell of fresh) {
      this.queue.push({ cell });
      cell.setQueued(true);
      cell.hideNotice();
    }
    this.refresh();
    const done = this.pump(stopOnFailure);
    return done;
  }

  private pumping: Promise<boolean> | null = null;
  private stopOnFailure = false;

  private pump(stopOnFailure: boolean): Promise<boolean> {
    this.stopOnFailure = this.stopOnFailure || stopOnFailure;
    if (this.pumping) return this.pumping;
    this.pumping = this.drain().finally(() => {
      this.pumping = null;
      this.stopOnFailure = false;
    });
    return this.pumping;
  }

  /** Runs the queue to its end: whether every cell succeeded. */
  private async drain(): Promise<boolean> {
    let ok = true;
    while (this.queue.length) {
      const { cell } = this.queue.shift()!;
      cell.setQueued(false);
      if (!this.cells.includes(cell)) continue;
      if (!cell.source.trim()) continue;
      this.running = cell;
      this.refresh();
      const status = await this.runOne(cell);
      this.running = null;
      if (this.restoring && this.cells.includes(cell)) this.restoring.done += 1;
      if (status !== "succeeded") {
        ok = false;
        if (this.stopOnFailure || this.restoring) {
          const at = this.cells.indexOf(cell) + 1;
          if (this.restoring) {
            this.restoreFailed = status === "cancelled"
              ? t("Restore stopped at cell {n}: it was interrupted.", { n: at })
              : t("Restore stopped at cell {n}: it failed.", { n: at });
          }
          for (const q of this.queue) q.cell.setQueued(false);
          this.queue = [];
        }
      }
      this.refresh();
    }
    return ok;
  }

  /** Runs one cell in the session and waits for its end: how it ended (or "refused"). */
  private async runOne(cell: Cell): Promise<string> {
    const source = cell.source;
    const ended = new Promise<void>((resolve) => this.waiters.set(cell, resolve));
    this.counts.set(cell, null);
    await cell.start(async () => {
      const info = await this.session.ensure();
      const options = this.options.profile?.() ? { profile: true } : {};
      const run = await this.session.run(source, () => cell.results.status.say(t("Waiting for the cell before it to finish…")), options);
      this.starts.set(cell, { at: Date.now(), source, session: info.id });
      this.runIds.set(cell, run.id);
      return run;
    });
    await ended;
    return this.finishes.get(cell) ?? "refused";
  }

  /** Interrupt: the running cell (the session keeps its state), and nothing queued runs. */
  interrupt(): void {
    for (const q of this.queue) q.cell.setQueued(false);
    this.queue = [];
    if (this.running) void this.running.session.cancel();
    this.refresh();
  }

  runAll(): Promise<boolean> {
    return this.enqueue(this.cells.filter((c) => c.type === "code"), true);
  }

  runAbove(): Promise<boolean> {
    const index = this.active ? this.cells.indexOf(this.active) : this.cells.length;
    return this.enqueue(this.cells.slice(0, Math.max(0, index)), true);
  }

  runStale(): Promise<boolean> {
    return this.enqueue(this.cells.filter((_, i) => this.stale[i] !== null && this.stale[i] !== undefined), true);
  }

  /** What a Restart loses: the names the cells that ran in the live session defined (in the
   *  cells' order, each once), and how many cells ran there. */
  sessionNames(): { names: string[]; cells: number } {
    const id = this.session.id;
    const names = new Set<string>();
    let cells = 0;
    this.states().forEach((state, i) => {
      const ran = this.cells[i].data.ran;
      if (!id || this.cells[i].type !== "code" || !ran || ran.session !== id) return;
      cells += 1;
      for (const name of state.names?.defines ?? []) names.add(name);
    });
    return { names: [...names], cells };
  }

  /** Restart: the session ends and a fresh one starts; every cell that ran is stale. */
  async restart(): Promise<void> {
    this.interrupt();
    this.restoring = null;
    this.restoreFailed = null;
    await this.session.stop();
    this.refresh();
    try {
      await this.session.ensure();
    } catch {
      // Said on the session's line.
    }
  }

  /** Restore after a stop: a new session, and the cells that had run run again, in order. */
  async restore(): Promise<boolean> {
    this.interrupt();
    const cells = this.cells.filter((c) => c.type === "code" && c.data.ran && c.source.trim());
    this.restoring = { done: 0, of: cells.length };
    this.restoreFailed = null;
    this.refresh();
    let ok = false;
    try {
      await this.session.ensure();
      ok = await this.enqueue(cells, true);
    } catch {
      ok = false;
    }
    this.restoring = null;
    this.refresh();
    return ok;
  }

  /** Picks up the session the cells ran in before a reload, when it still lives. */
  async pickUp(id: string | null): Promise<void> {
    if (id) await this.session.pickUp(id);
    this.refresh();
  }

  /** The runs the cells showed before a reload (this tab), else their last runs, shown again. */
  resumeRuns(): void {
    for (const cell of this.cells) {
      if (cell.type !== "code") continue;
      const key = this.runKey(cell);
      if (!tabStorage.get(key) && cell.data.run) tabStorage.set(key, cell.data.run);
      if (tabStorage.get(key)) cell.resume();
    }
  }

  /** Before running a cell whose inputs are stale or not there: say so, and let the person pick. */
  private warnUpstream(cell: Cell, blockers: number[], then: Then): void {
    const states = this.states();
    const index = this.cells.indexOf(cell);
    const parts = blockers.map((i) => {
      const stale = this.stale[i];
      const names = states[index].names?.uses.filter((n) => states[i].names?.defines.includes(n)) ?? [];
      const n = i + 1;
      const some = names.length > 0;
      const held = heldBackBy(this.cells[i].data, stale ?? null, this.session.id);
      const text = held === "stale"
        ? some ? t("cell {n} ({names}) is stale: {why}", { n }) : t("cell {n} is stale: {why}", { n })
        : held === "failed"
          ? some ? t("cell {n} ({names}) ran in this session and did not succeed", { n }) : t("cell {n} ran in this session and did not succeed", { n })
          : some ? t("cell {n} ({names}) has not run in this session", { n }) : t("cell {n} has not run in this session", { n });
      return compose(text, { names: codeNames(names), why: stale ? staleParts(stale) : [] });
    });
    const between = language === "zh-hans" ? "；" : "; ";
    const cells = parts.flatMap((part, k) => (k ? [between, ...part] : part));
    const message = compose(t("This cell reads from cells whose values are not current: {cells}."), { cells });
    cell.showNotice(message, [
      {
        label: blockers.length === 1 ? t("Run stale first") : t("Run stale first ({n})", { n: blockers.length }),
        primary: true,
        run: () => {
          void this.enqueue([...blockers.map((i) => this.cells[i]), cell], true);
          this.after(cell, then);
        },
      },
      {
        label: t("Run anyway"),
        run: () => {
          void this.enqueue([cell], false);
          this.after(cell, then);
        },
      },
    ]);
  }

  // ---- Names and staleness -------------------------------------------------------------------

  private states(): CellState[] {
    return this.cells.map((cell) => {
      const source = cell.source;
      const names = cell.type !== "code" ? { defines: [], uses: [] }
        : this.namesByCode.get(source) ?? this.lastNames.get(cell.id) ?? null;
      return { cell: { ...cell.data, source }, names };
    });
  }

  /** What cell ``index``'s code as it is now defines and reads, once the server has said (null
   *  until then). */
  namesOf(index: number): CellNames | null {
    const cell = this.cells[index];
    return cell?.type === "code" ? this.namesByCode.get(cell.source) ?? null : null;
  }

  /** Asks the server, a moment after the typing stops, which names the cells define and use. */
  private askNames(): void {
    if (this.namesBroken) return;
    window.clearTimeout(this.namesTimer);
    this.namesTimer = window.setTimeout(() => void this.fetchNames(), NAMES_PAUSE_MS);
  }

  private async fetchNames(): Promise<void> {
    const wanted = [...new Set(this.cells.filter((c) => c.type === "code").map((c) => c.source))]
      .filter((code) => !this.namesByCode.has(code));
    if (!wanted.length) return;
    try {
      const answer = await request<{ cells?: { defines?: unknown; uses?: unknown }[] }>("POST", "/api/cells/names", { cells: wanted });
      (answer.cells ?? []).forEach((names, i) => {
        const list = (v: unknown) => (Array.isArray(v) ? v.filter((n): n is string => typeof n === "string") : []);
        if (i < wanted.length) this.namesByCode.set(wanted[i], { defines: list(names.defines), uses: list(names.uses) });
      });
    } catch (error) {
      // Without names every cell above counts as a cell's input: stale more often, never less.
      if (error instanceof ApiError && (error.status === 404 || error.status === 405)) this.namesBroken = true;
      return;
    }
    for (const cell of this.cells) {
      const names = this.namesByCode.get(cell.source);
      if (names) this.lastNames.set(cell.id, names);
    }
    this.refresh();
    this.filterProblems();
  }

  /** Every cell's number, staleness and state; the toolbar's counts; the session's line. */
  refresh(): void {
    const states = this.states();
    this.stale = staleness(states, this.session.id);
    this.cells.forEach((cell, i) => {
      cell.setIndex(i + 1);
      cell.setStale(cell.phase === "idle" && !this.isQueued(cell) ? this.stale[i] : null);
    });
    const busy = this.running !== null || this.queue.length > 0;
    this.options.onCounts(this.stale.filter((s) => s !== null).length, busy);
    this.options.onSession(this.sessionLine());
  }

  private sessionLine(): SessionLine {
    const line = this.sessionLineAlone();
    const view = this.sessionView;
    const lease = view.phase === "state" && view.info.state !== "stopped" ? leaseText(view.info) : null;
    if (!lease) return line;
    return { ...line, text: `${line.text} · ${lease}`, content: line.content ? [...line.content, ` · ${lease}`] : undefined };
  }

  private sessionLineAlone(): SessionLine {
    const view = this.sessionView;
    const hadRun = this.cells.some((c) => c.data.ran);
    if (this.restoring) {
      const done = Math.min(this.restoring.done + (this.running ? 1 : 0), this.restoring.of);
      return { phase: "restoring", text: t("Restoring {done} / {of}", { done, of: this.restoring.of }), restorable: false, progress: this.restoring };
    }
    if (this.restoreFailed) {
      return { phase: "failed", text: this.restoreFailed, restorable: false, progress: null };
    }
    if (view.phase === "starting") return { phase: "starting", text: t("Starting a session…"), restorable: false, progress: null };
    if (view.phase === "failed") return { phase: "failed", text: view.message, restorable: hadRun, progress: null };
    if (view.phase === "none") {
      return {
        phase: "none",
        text: hadRun
          ? t("No session: the values the cells made are gone. Restore runs them again.")
          : t("No session yet: the first run starts one."),
        restorable: hadRun,
        progress: null,
      };
    }
    const info = view.info;
    if (info.state === "stopped") {
      const reason = info.stopped_reason ? stopReason(info.stopped_reason).replace(/[.。]$/, "") : "";
      return { phase: "stopped", text: reason ? t("Stopped: {reason}.", { reason }) : t("Stopped."), restorable: hadRun, progress: null };
    }
    if (this.running) {
      const n = this.cells.indexOf(this.running) + 1;
      const waiting = this.queue.length;
      const text = waiting ? t("Running cell {n} ({waiting} waiting)", { n, waiting }) : t("Running cell {n}", { n });
      return { phase: "running", text, restorable: false, progress: null };
    }
    if (info.state === "live") return { phase: "running", text: tc("session state", "Running"), restorable: false, progress: null };
    const held = Object.keys(info.names ?? {});
    if (!held.length) return { phase: "idle", text: t("Idle"), restorable: false, progress: null };
    // The first few names, as code, and how many more.
    const names = codeNames(held.slice(0, 4));
    if (held.length > 4) names.push(`${LIST_SEPARATOR}+${held.length - 4}`);
    const content = compose(t("Idle · holds {names}"), { names });
    const text = content.map((part) => (typeof part === "string" ? part : part.textContent)).join("");
    return { phase: "idle", text, content, restorable: false, progress: null };
  }

  // ---- Problems ------------------------------------------------------------------------------

  /** A cell's "undefined name" for a name a cell above defines (or the session holds) is no
   *  problem in a notebook: such markers are taken off as they come. */
  private watchProblems(): void {
    monaco.editor.onDidChangeMarkers((uris) => {
      const wanted = new Set(uris.map((u) => u.toString()));
      for (const cell of this.cells) {
        const model = cell.editor?.editor.getModel();
        // Not inside the event: the editor's squiggles follow a change made after it.
        if (model && wanted.has(model.uri.toString())) window.setTimeout(() => this.filterCell(cell, model), 0);
      }
    });
  }

  private filterProblems(): void {
    for (const cell of this.cells) {
      const model = cell.editor?.editor.getModel();
      if (model) this.filterCell(cell, model);
    }
  }

  private filterCell(cell: Cell, model: monaco.editor.ITextModel): void {
    if (model.isDisposed()) return;
    const markers = monaco.editor.getModelMarkers({ resource: model.uri });
    if (cell.type === "markdown") {
      // Markdown is not Python: none of its problems is one.
      for (const owner of new Set(markers.map((m) => m.owner))) monaco.editor.setModelMarkers(model, owner, []);
      return;
    }
    const index = this.cells.indexOf(cell);
    const known = new Set<string>(Object.keys(this.session.current.phase === "state" && this.session.current.info.names || {}));
    const states = this.states();
    for (let i = 0; i < index; i++) for (const name of states[i].names?.defines ?? []) known.add(name);
    if (!known.size) return;
    const dropped = markers.filter((m) => {
      const code = typeof m.code === "string" ? m.code : m.code?.value;
      const name = /`([^`]+)`/.exec(m.message)?.[1];
      return code === "F821" && name !== undefined && known.has(name);
    });
    if (!dropped.length) return;
    for (const owner of new Set(dropped.map((m) => m.owner))) {
      monaco.editor.setModelMarkers(model, owner, markers.filter((m) => m.owner === owner && !dropped.includes(m)));
    }
  }
}
