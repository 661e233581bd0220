// A course's live dashboard (/courses/<id>/dashboard, instructors): the class's grid of students
// × assignments, the feed of runs and submissions, the most common errors and the score
// histograms, and the assignments whose checks crashed on students' grades (with the traceback,
// the moment one lands). The course's websocket (/ws/courses/<id>/) sends a snapshot, then every
// change as it happens; a cell opens on that student's latest code, output and checks
// (./cell-detail.ts).
import { clauses, clockTime, compose, dateTime, listOf, points, scoreTone, textDetails } from "../course-page";
import { byId, el } from "../dom";
import { isTerminal } from "../events";
import { language, t, tn } from "../i18n";
import { CLOSE_CODES } from "../protocol.gen";
import { statusWord } from "../status";
import { CellDetail } from "./cell-detail";
import {
  BUSY, describeCell, emptyCell, type AssignmentInfo, type Cell, type CheckErrors, type CommonError, type Item,
  type Snapshot, type Student,
} from "./model";

/** What the page tells the dashboard (#dashboard-data). */
export interface DashboardData {
  course: number;
  title: string;
  ws: string;
  csv: string;
  archived: boolean;
}

const FEED_LENGTH = 50;
/** The common errors and histograms come again from the server at most this often. */
const RESYNC_MS = 3000;
const BINS = 10;

export class Dashboard {
  private students: Student[] = [];
  private assignments: AssignmentInfo[] = [];
  private cells = new Map<string, Cell>();
  private feed: Item[] = [];
  private checkErrors = new Map<number, CheckErrors>();
  private readonly buttons = new Map<string, HTMLTableCellElement>();
  /** The cell the grid's one Tab stop is on (arrow keys move it). */
  private focusKey: string | null = null;
  private building = false;
  private socket: WebSocket | null = null;
  private retryMs = 500;
  private resyncTimer: number | null = null;
  private lastResync = 0;
  private gone = false;

  private readonly gridHost = byId("grid-host");
  private readonly summary = byId("grid-summary");
  private readonly feedList = byId("feed");
  private readonly feedEmpty = byId("feed-empty");
  private readonly errorList = byId("errors");
  private readonly errorsEmpty = byId("errors-empty");
  private readonly histograms = byId("histograms");
  private readonly histogramsEmpty = byId("histograms-empty");
  private readonly live = byId("live-state");
  private readonly checkErrorsBox = byId("check-errors");
  private readonly checkErrorsList = byId("check-errors-list");
  private readonly detail: CellDetail;

  private hasSnapshot = false;

  constructor(private readonly data: DashboardData) {
    this.detail = new CellDetail();
    this.connect();
    // A network that lets no websocket through: the class as it is now, without the updates.
    window.setTimeout(() => {
      if (!this.hasSnapshot) void this.resync(true);
    }, 5000);
  }

  // The socket ------------------------------------------------------------------------------------

  private connect(): void {
    if (this.gone) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}${this.data.ws}`);
    this.socket = socket;
    this.setLive(this.retryMs > 500 ? "reconnecting" : "connecting");
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      let data: { type?: string; item?: Item } & Partial<Snapshot>;
      try {
        data = JSON.parse(String(message.data));
      } catch {
        return;
      }
      if (data.type === "snapshot") {
        this.retryMs = 500;
        this.setLive("live");
        this.applySnapshot(data as Snapshot);
      } else if (data.type === "update" && data.item) {
        this.applyItem(data.item);
      }
    };
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      // No such course, or not its instructor (any more).
      if (close.code === CLOSE_CODES.not_found) {
        this.gone = true;
        this.setLive("closed");
        return;
      }
      this.setLive("reconnecting");
      const wait = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, 10_000);
      window.setTimeout(() => this.connect(), wait);
    };
  }

  private setLive(state: "connecting" | "live" | "reconnecting" | "closed"): void {
    if (this.live.dataset.state === state) return;
    this.live.dataset.state = state;
    this.live.textContent = {
      connecting: t("Connecting…"),
      live: t("Live"),
      reconnecting: t("Reconnecting…"),
      closed: t("Not live: you no longer teach this course"),
    }[state];
  }

  /** The common errors and histograms again (and any student who joined meanwhile), soon. */
  private scheduleResync(): void {
    if (this.resyncTimer !== null) return;
    const wait = Math.max(300, this.lastResync + RESYNC_MS - Date.now());
    this.resyncTimer = window.setTimeout(() => void this.resync(), wait);
  }

  private async resync(whole = false): Promise<void> {
    this.lastResync = Date.now();
    try {
      const response = await fetch(`/api/courses/${this.data.course}/dashboard`, {
        headers: { Accept: "application/json" }, credentials: "same-origin",
      });
      if (response.ok && !(whole && this.hasSnapshot)) this.applySnapshot((await response.json()) as Snapshot, whole);
    } catch {
      // The next change asks again.
    } finally {
      this.resyncTimer = null;
    }
  }

  // State -----------------------------------------------------------------------------------------

  /** ``withFeed``: a snapshot the socket sent (it opened or reopened), which replaces all;
   *  otherwise one asked for meanwhile, for the common errors, histograms and new students. */
  private applySnapshot(snapshot: Snapshot, withFeed = true): void {
    this.hasSnapshot = true;
    const students = Array.isArray(snapshot.students) ? snapshot.students : [];
    const assignments = Array.isArray(snapshot.assignments) ? snapshot.assignments : [];
    const shapeChanged =
      students.map((s) => `${s.id}:${s.username}`).join() !== this.students.map((s) => `${s.id}:${s.username}`).join() ||
      assignments.map((a) => `${a.id}:${a.title}:${a.max_score}`).join() !==
        this.assignments.map((a) => `${a.id}:${a.title}:${a.max_score}`).join();
    this.students = students;
    this.assignments = assignments;
    if (withFeed) {
      this.cells = new Map(Object.entries(snapshot.cells ?? {}));
    } else {
      // Asked for again while the socket is open: the cells it updated are as new as they get;
      // the server's fill in the ones it has not (a student who joined meanwhile).
      for (const [key, cell] of Object.entries(snapshot.cells ?? {})) if (!this.cells.has(key)) this.cells.set(key, cell);
    }
    if (shapeChanged) this.renderGrid();
    else for (const key of this.buttons.keys()) this.renderCell(key);
    this.renderSummary();
    if (withFeed) {
      this.feed = (Array.isArray(snapshot.feed) ? snapshot.feed : []).slice(0, FEED_LENGTH);
      this.renderFeed();
    }
    this.renderErrors(Array.isArray(snapshot.errors) ? snapshot.errors : []);
    this.checkErrors = new Map((Array.isArray(snapshot.check_errors) ? snapshot.check_errors : []).map((e) => [e.assignment, e]));
    this.renderCheckErrors();
    this.renderHistograms(snapshot.histograms ?? {});
  }

  private applyItem(item: Item): void {
    if (item.kind === "member" || item.kind === "member_removed") {
      // Someone joined, left or changed role: the grid's rows come again from the server.
      this.scheduleResync();
    }
    if (item.kind === "run" || item.kind === "submission") {
      const known = this.students.some((s) => s.id === item.student) && this.assignments.some((a) => a.id === item.assignment);
      if (!known) {
        // A student who joined after the snapshot (or an instructor trying the assignment).
        this.scheduleResync();
      } else {
        const key = `${item.student}:${item.assignment}`;
        const cell = this.cells.get(key) ?? emptyCell();
        if (item.kind === "run") this.takeRun(cell, item);
        else this.takeSubmission(cell, item);
        this.cells.set(key, cell);
        this.renderCell(key, true);
        this.renderSummary();
        if (item.kind === "submission" && item.status === "graded") this.scheduleResync();
        if (item.kind === "run" && item.status === "failed") this.scheduleResync();
      }
    }
    if (item.kind === "regrade" && item.done !== undefined && item.queued !== undefined && item.done >= item.queued) {
      this.scheduleResync();
    }
    if (item.kind === "check_error" && typeof item.assignment === "number") {
      // Shown at once, traceback and all; the snapshot that follows counts the grades exactly.
      const known = this.checkErrors.get(item.assignment);
      this.checkErrors.set(item.assignment, {
        assignment: item.assignment, submissions: known?.submissions ?? 1, checks: item.checks ?? [],
        error: item.error ?? "", submission: item.submission ?? undefined, student: item.student, at: item.at,
      });
      this.renderCheckErrors();
      this.scheduleResync();
    }
    const known = this.feed.findIndex((f) => sameSubject(f, item));
    if (known >= 0 && sameNews(this.feed[known], item)) {
      // Told again, with nothing new (a run's end stored after its grade came, say): it keeps its
      // place, or a reloaded feed would reorder itself under the reader's eyes.
      this.feed[known] = { ...this.feed[known], ...item, at: this.feed[known].at };
    } else {
      this.feed = this.feed.filter((f) => !(sameSubject(f, item)));
      this.feed.unshift(item);
      this.feed = this.feed.slice(0, FEED_LENGTH);
    }
    this.renderFeed();
  }

  private takeRun(cell: Cell, item: Item): void {
    const status = item.status ?? "";
    // A run that ends after a newer one started does not hide the newer one.
    const newer = item.run === cell.run || status === "queued" || status === "running" || !cell.run_status
      || isTerminal(cell.run_status);
    if (!newer) return;
    cell.run = item.run ?? cell.run;
    cell.run_status = status || cell.run_status;
    cell.at = item.at ?? cell.at;
  }

  private takeSubmission(cell: Cell, item: Item): void {
    if (typeof item.submission === "number" && cell.submission !== null && item.submission < cell.submission) return;
    cell.submission = item.submission ?? cell.submission;
    cell.status = item.status ?? cell.status;
    cell.score = item.score ?? null;
    cell.max_score = item.max_score ?? null;
    cell.late = Boolean(item.late);
    cell.regrading = Boolean(item.regrading);
    cell.needs_regrade = Boolean(item.needs_regrade);
    if (item.run && (cell.run === null || item.status === "queued")) {
      cell.run = item.run;
      cell.run_status = cell.run_status && item.run === cell.run ? cell.run_status : "queued";
    }
    cell.at = item.at ?? cell.at;
  }

  // The grid --------------------------------------------------------------------------------------

  private renderGrid(): void {
    this.buttons.clear();
    if (this.students.length === 0 || this.assignments.length === 0) {
      this.gridHost.replaceChildren(el("p", "empty",
        this.students.length === 0
          ? t("No students yet. They join with the course's code or link (on the course page).")
          : t("No assignments yet. Make one on the course page.")));
      return;
    }
    const table = el("table", "class-grid");
    table.id = "class-grid";
    table.append(el("caption", "visually-hidden",
      t("Each student's latest status and score per assignment. A cell opens their code, output and checks.")));
    const headRow = el("tr", null, el("th", "grid-corner", t("Student")));
    (headRow.firstElementChild as HTMLTableCellElement).scope = "col";
    for (const a of this.assignments) {
      const th = el("th", "grid-assignment", el("span", "grid-assignment-title", a.title),
        el("span", "grid-assignment-max", t("of {max}", { max: points(a.max_score) })));
      th.scope = "col";
      th.title = a.title;
      headRow.append(th);
    }
    const body = el("tbody");
    this.building = true;
    for (const s of this.students) {
      const th = el("th", "grid-student", s.username);
      th.scope = "row";
      const row = el("tr", null, th);
      for (const a of this.assignments) {
        const key = `${s.id}:${a.id}`;
        const td = el("td", "grid-cell");
        td.dataset.key = key;
        this.buttons.set(key, td);
        row.append(td);
        this.renderCell(key);
      }
      body.append(row);
    }
    this.building = false;
    table.append(el("thead", null, headRow), body);
    table.addEventListener("keydown", (e) => this.onGridKey(e));
    table.addEventListener("focusin", (e) => {
      const td = (e.target as HTMLElement).closest<HTMLTableCellElement>("td.grid-cell");
      if (td?.dataset.key && td.querySelector("button")) this.setFocusKey(td.dataset.key);
    });
    this.focusKey = null;
    const scroller = el("div", "grid-scroll", table);
    scroller.tabIndex = 0;
    scroller.setAttribute("role", "region");
    scroller.setAttribute("aria-label", t("Class grid"));
    this.gridHost.replaceChildren(scroller);
    this.setFocusKey(null);
  }

  /** The grid's Tab stop: this cell's button (null: the first cell that has one). */
  private setFocusKey(key: string | null): void {
    const has = (k: string | null) => k !== null && Boolean(this.buttons.get(k)?.querySelector("button"));
    let target = has(key) ? key : has(this.focusKey) ? this.focusKey : null;
    if (target === null) target = [...this.buttons.keys()].find((k) => has(k)) ?? null;
    this.focusKey = target;
    for (const [k, td] of this.buttons) {
      const button = td.querySelector("button");
      if (button) button.tabIndex = k === target ? 0 : -1;
    }
  }

  /** Arrow keys move between the cells that open something; Home and End along the row
   *  (with Ctrl, to the grid's first and last). */
  private onGridKey(e: KeyboardEvent): void {
    const td = (e.target as HTMLElement).closest<HTMLTableCellElement>("td.grid-cell");
    if (!td?.dataset.key || e.altKey || e.metaKey || e.shiftKey) return;
    const rows = this.students.map((s) => this.assignments.map((a) => `${s.id}:${a.id}`));
    const [studentId, assignmentId] = td.dataset.key.split(":").map(Number);
    const r = this.students.findIndex((s) => s.id === studentId);
    const c = this.assignments.findIndex((a) => a.id === assignmentId);
    const usable = (key: string | undefined) => key !== undefined && Boolean(this.buttons.get(key)?.querySelector("button"));
    let next: string | undefined;
    const scan = (dr: number, dc: number) => {
      for (let i = r + dr, j = c + dc; i >= 0 && i < rows.length && j >= 0 && j < rows[0].length; i += dr, j += dc) {
        if (usable(rows[i][j])) return rows[i][j];
      }
      return undefined;
    };
    const flat = rows.flat().filter((k) => usable(k));
    switch (e.key) {
      case "ArrowRight": next = scan(0, 1); break;
      case "ArrowLeft": next = scan(0, -1); break;
      case "ArrowDown": next = scan(1, 0); break;
      case "ArrowUp": next = scan(-1, 0); break;
      case "Home": next = e.ctrlKey ? flat[0] : rows[r].find((k) => usable(k)); break;
      case "End": next = e.ctrlKey ? flat[flat.length - 1] : [...rows[r]].reverse().find((k) => usable(k)); break;
      default: return;
    }
    e.preventDefault();
    if (!next) return;
    this.setFocusKey(next);
    this.buttons.get(next)?.querySelector("button")?.focus();
  }

  private renderCell(key: string, flash = false): void {
    const td = this.buttons.get(key);
    if (!td) return;
    const cell = this.cells.get(key);
    const [studentId, assignmentId] = key.split(":").map(Number);
    const student = this.students.find((s) => s.id === studentId);
    const assignment = this.assignments.find((a) => a.id === assignmentId);
    if (!student || !assignment) return;
    const view = describeCell(cell);
    td.dataset.tone = view.tone;
    td.dataset.status = cell?.status ?? "";
    td.dataset.runStatus = cell?.run_status ?? "";
    if (!cell || (cell.submission === null && cell.run === null)) {
      const none = el("span", "cell-none", "–");
      none.setAttribute("aria-hidden", "true");
      td.replaceChildren(none, el("span", "visually-hidden", t("nothing yet")));
      return;
    }
    const existing = td.querySelector("button");
    const button = existing ?? el("button", "cell-button");
    button.type = "button";
    button.replaceChildren(el("span", "cell-main", view.main));
    if (view.sub) button.append(" ", el("span", "cell-sub", view.sub));
    // The name starts with what the cell shows (as speech input users say it), then says whose.
    const shown = view.sub ? `${view.main} ${view.sub}` : view.main;
    button.setAttribute("aria-label", t("{shown}: {student}, {assignment}, {details}",
      { shown, student: student.username, assignment: assignment.title, details: view.label }));
    button.title = `${view.label}${cell.at ? ` · ${dateTime(cell.at)}` : ""}`;
    if (!existing) {
      button.tabIndex = -1;
      button.addEventListener("click", () => {
        const current = this.cells.get(key);
        if (current) this.detail.open(student, assignment, current);
      });
      td.replaceChildren(button);
      if (!this.building && (this.focusKey === null || !this.buttons.get(this.focusKey)?.querySelector("button"))) {
        this.setFocusKey(key);
      }
    }
    if (flash) {
      td.classList.remove("is-new");
      void td.offsetWidth; // restart the highlight
      td.classList.add("is-new");
    }
  }

  private renderSummary(): void {
    const n = this.students.length;
    let submitted = 0;
    let active = 0;
    for (const cell of this.cells.values()) {
      if (cell.submission !== null) submitted += 1;
      if (BUSY.has(cell.run_status ?? "") || BUSY.has(cell.status ?? "")) active += 1;
    }
    this.summary.textContent = tn("{n} student · {submitted} submitted · {active} running or grading now",
      "{n} students · {submitted} submitted · {active} running or grading now", n, { n, submitted, active });
  }

  // Feed, errors, histograms ----------------------------------------------------------------------

  private renderFeed(): void {
    this.feedEmpty.hidden = this.feed.length > 0;
    this.feedList.replaceChildren(...this.feed.map((item) => this.feedItem(item)));
  }

  private feedItem(item: Item): HTMLElement {
    const whoId = item.student ?? item.user;
    const who = this.students.find((s) => s.id === whoId)?.username ?? (whoId ? t("user {id}", { id: whoId }) : "");
    const what = this.assignments.find((a) => a.id === item.assignment)?.title ?? "";
    const time = el("time", "feed-time", clockTime(item.at ?? null));
    if (item.at) time.dateTime = item.at;
    const li = el("li", "feed-item", time);
    li.dataset.kind = item.kind;
    if (item.kind === "run") {
      const status = item.status ?? "";
      li.dataset.status = status;
      const error = item.exc_type
        ? el("code", "feed-error", item.line ? t("{type} · line {line}", { type: item.exc_type, line: item.line }) : item.exc_type)
        : null;
      const text = item.submission ? t("{who} submission ran {assignment}: {status}") : t("{who} ran {assignment}: {status}");
      li.append(el("span", "feed-text", ...compose(text, {
        who: el("strong", null, who),
        assignment: el("span", "feed-assignment", what),
        status: el("span", `feed-status status-${status}`, statusWord(status)),
      }), error ? " " : null, error));
    } else if (item.kind === "submission") {
      const status = item.status ?? "";
      li.dataset.status = status;
      const outcome = status === "graded" && typeof item.score === "number"
        ? el("span", `feed-score score-${scoreTone(item.score, item.max_score)}`, `${points(item.score)} / ${points(item.max_score)}`)
        : el("span", "feed-status status-running",
          status === "graded" ? t("graded") : status === "queued" ? t("submitted") : status === "grading" ? t("grading") : status);
      li.append(el("span", "feed-text", ...compose(t("{who} submitted {assignment}: {outcome}"), {
        who: el("strong", null, who), assignment: el("span", "feed-assignment", what), outcome,
      }), item.late ? el("span", "chip chip-warn", t("late")) : null));
    } else if (item.kind === "check_error") {
      li.dataset.status = "failed";
      const names = listOf((item.checks ?? []).map((n) => `“${n}”`));
      const text = names
        ? t("The checks of {assignment} crashed on {who}’s submission: {names} could not run", { names })
        : t("The checks of {assignment} crashed on {who}’s submission");
      li.append(el("span", "feed-text", ...compose(text, {
        assignment: el("span", "feed-assignment", what), who: el("strong", null, who),
      })));
    } else if (item.kind === "regrade") {
      const text = t("Regrading {assignment}: {done} of {queued} done", { done: item.done ?? 0, queued: item.queued ?? 0 });
      li.append(el("span", "feed-text", ...compose(text, { assignment: el("span", "feed-assignment", what) })));
    } else if (item.kind === "member" || item.kind === "member_removed") {
      const name = item.username ?? who;
      const change = item.kind === "member_removed" || !item.role ? t("{who} left the course")
        : item.role === "student" ? t("{who} joined the course") : t("{who} is an instructor now");
      li.append(el("span", "feed-text", ...compose(change, { who: el("strong", null, name) })));
    } else {
      li.append(el("span", "feed-text", item.kind.replace(/_/g, " ")));
    }
    return li;
  }

  /** The assignments whose checks crashed on students' latest grades: the instructor's to fix. */
  private renderCheckErrors(): void {
    const entries = [...this.checkErrors.values()].filter((e) => e.submissions > 0);
    this.checkErrorsBox.hidden = entries.length === 0;
    this.checkErrorsList.replaceChildren(...entries.map((e) => {
      const title = this.assignments.find((a) => a.id === e.assignment)?.title ?? t("Assignment {id}", { id: e.assignment });
      const link = el("a", "crash-assignment", title);
      link.href = `/assignments/${e.assignment}/#submissions`;
      const n = e.submissions;
      const names = listOf(e.checks.map((c) => `“${c}”`));
      const lead = names
        ? tn("{assignment}: {n} student’s latest grade needs a regrade ({names} could not run). Fix the checks, then regrade.",
          "{assignment}: {n} students’ latest grades need a regrade ({names} could not run). Fix the checks, then regrade.",
          n, { n, names })
        : tn("{assignment}: {n} student’s latest grade needs a regrade. Fix the checks, then regrade.",
          "{assignment}: {n} students’ latest grades need a regrade. Fix the checks, then regrade.", n, { n });
      const li = el("li", "crash-item",
        el("p", "crash-lead", ...compose(lead, { assignment: link })),
        textDetails(t("Traceback"), e.error || t("(none was sent)"), "submission-error"));
      li.dataset.assignment = String(e.assignment);
      return li;
    }));
  }

  private renderErrors(errors: CommonError[]): void {
    this.errorsEmpty.hidden = errors.length > 0;
    this.errorList.replaceChildren(...errors.slice(0, 8).map((e) => {
      const students = Array.isArray(e.students) ? e.students.length : Number(e.students) || 0;
      const title = this.assignments.find((a) => a.id === e.assignment)?.title ?? "";
      const li = el("li", "error-item",
        el("span", "error-count", String(e.count)),
        el("span", "error-what",
          el("span", "error-head", el("code", "error-type", e.exc_type || t("Error")),
            e.line ? el("span", "error-where", " ", t("line {line}", { line: e.line })) : null),
          e.message ? el("span", "error-example", e.message) : null,
          el("span", "error-meta", `${title} · ${clauses([
            tn("{n} student", "{n} students", students, { n: students }),
            tn("{n} run", "{n} runs", e.count, { n: e.count }),
          ])}`)),
      );
      return li;
    }));
  }

  private renderHistograms(histograms: Record<string, number[]>): void {
    this.histogramsEmpty.hidden = this.assignments.length > 0;
    this.histograms.replaceChildren(...this.assignments.map((a) => {
      const raw = histograms[String(a.id)];
      const counts = Array.from({ length: BINS }, (_, i) => (Array.isArray(raw) ? Number(raw[i]) || 0 : 0));
      const total = counts.reduce((x, y) => x + y, 0);
      const top = Math.max(1, ...counts);
      const bars = el("div", "hist-bars");
      bars.setAttribute("aria-hidden", "true");
      counts.forEach((n, i) => {
        const bar = el("span", "hist-bar");
        bar.style.setProperty("--h", `${(n / top) * 100}%`);
        bar.dataset.tone = i === BINS - 1 ? "ok" : i === 0 ? "bad" : "part";
        bar.title = tn("{from}–{to} %: {n} student", "{from}–{to} %: {n} students", n, { from: i * 10, to: (i + 1) * 10, n });
        if (n > 0) bar.append(el("span", "hist-count", String(n)));
        bars.append(bar);
      });
      const words = counts.map((n, i) => t("{from} to {to} %: {n}", { from: i * 10, to: (i + 1) * 10, n })).filter((_, i) => counts[i] > 0);
      const figure = el("figure", "histogram",
        el("figcaption", "hist-caption", el("span", "hist-title", a.title),
          el("span", "hist-total", t("{graded} graded of {total}", { graded: total, total: this.students.length }))),
        bars,
        el("div", "hist-axis", el("span", null, "0 %"), el("span", null, "50 %"), el("span", null, "100 %")),
        el("p", "visually-hidden", total
          ? t("Scores of {assignment}: {scores}.", { assignment: a.title, scores: words.join(language === "zh-hans" ? "；" : "; ") })
          : t("No graded submission of {assignment} yet.", { assignment: a.title })),
      );
      figure.dataset.assignment = String(a.id);
      return figure;
    }));
  }
}

/** Whether a feed item says what the one before it about the same thing said. */
function sameNews(a: Item, b: Item): boolean {
  return a.status === b.status && a.score === b.score && a.max_score === b.max_score;
}

/** Two feed items about the same thing (the same run, the same submission): the newer replaces. */
function sameSubject(a: Item, b: Item): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "run") return Boolean(a.run) && a.run === b.run;
  if (a.kind === "submission") return a.submission !== undefined && a.submission === b.submission;
  if (a.kind === "regrade") return a.assignment === b.assignment && a.regrade === b.regrade;
  if (a.kind === "check_error") return a.submission === b.submission;
  return false;
}
