// An assignment's page (/assignments/<id>/): the editor with the starter code (or the person's
// draft), Run through the playground's own run view and panes, Submit, the submissions with their
// checks and score (or "results after the due date"), and, for instructors, the assignment's
// settings, starter code and hidden checks, and Regrade with its progress.
//
// The hidden checks never reach a student's page: the server renders none, and only an
// instructor's page asks for them (GET /api/assignments/<id> answers them to instructors only).
import "../style.css";
import "../courses.css";

import { ApiError, formatCode, listDevices } from "../api";
import {
  getAssignment,
  getSubmission,
  listSubmissions,
  regrade,
  startAssignmentRun,
  studentName,
  submit,
  updateAssignment,
  type AssignmentDetail,
  type NewSubmission,
  type Submission,
} from "../course-api";
import {
  ago,
  checkList,
  dateTime,
  errorText,
  points,
  scoreTone,
  setError,
  showFlash,
  localizeTimes,
  textDetails,
} from "../course-page";
import { findDevice } from "../devices";
import { byId, el, focusAfter, maybeById, pageData } from "../dom";
import { Drafts } from "../drafts";
import { createEditor, type CodeEditor } from "../editor";
import { Tabs, type Pane } from "../panes/pane";
import { runShortcut } from "../platform";
import type { RunView } from "../run";
import type { RunEvent } from "../events";
import type { StatusLine } from "../status";
import { KEYS } from "../storage";
import { currentTheme } from "../theme";
import { editorWorkerUrl, Workbench } from "../workbench";

interface PageData {
  id: number;
  title: string;
  course: { id: number; title: string; archived: boolean };
  role: "instructor" | "student";
  starter_code: string;
  device: string;
  devices: string[];
  due: string | null;
  past_due: boolean;
  results_before_due: boolean;
  max_score: number | null;
  wall_s: number | null;
  username: string;
}

/** How often a submission being graded is asked about, and for how long at most. */
const POLL_MS = 1000;
const POLL_FOR_MS = 15 * 60 * 1000;

/** A pane that is a part of the page the server rendered (the brief, the settings form). */
class StaticPane implements Pane {
  onChange?: (count: number | null) => void;
  constructor(readonly id: string, readonly title: string, readonly element: HTMLElement) {}
  reset(): void {}
  handle(): void {}
}

/** What makes a submission's shown details out of date. */
function signature(s: Submission): string {
  return [s.status, s.score, s.max_score, s.graded_at, s.regrading, s.results].join("|");
}

/** The results of a run: the workbench's Output, Compiled, Timing and Figures, under a tab bar of
 *  their own, as one tab of the page. The run session shows each run to the workbench's panes
 *  (not through the page's tabs, whose other panes keep what they show from run to run); this
 *  tab only raises its alert on an error. */
class ResultsPane implements Pane, RunView {
  readonly id = "results";
  readonly title = "Results";
  onChange?: (count: number | null) => void;
  onAlert?: (alert: string | null) => void;

  constructor(readonly element: HTMLElement) {}

  reset(): void {
    this.onAlert?.(null);
  }

  idle(): void {
    this.onAlert?.(null);
  }

  handle(event: RunEvent): void {
    if (event.type === "error") this.onAlert?.("error");
  }
}

/** The submissions: a student's own, or, for an instructor, everyone's; latest first. Each
 *  opens on its checks (fetched when opened: the list has only the scores). */
class SubmissionsPane implements Pane {
  readonly id = "submissions";
  readonly title = "Submissions";
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  private readonly list: HTMLElement;
  private readonly placeholder: HTMLElement;
  private items: Submission[] = [];
  private readonly cards = new Map<number, { card: HTMLElement; head: HTMLElement; more: HTMLDetailsElement; body: HTMLElement; shown: string }>();
  private readonly details = new Map<number, { detail: Submission; signature: string }>();
  private readonly opened = new Set<number>();
  private autoOpened = false;

  constructor(private readonly data: PageData, tools: HTMLElement | null) {
    this.placeholder = el("p", "submissions-empty",
      data.role === "instructor" ? "No submissions yet." : "You have not submitted yet. Submit sends your code for grading.");
    const hint = el("p", "submissions-hint",
      data.role === "instructor"
        ? "Everyone's submissions, latest first. Instructors may submit too, to try the checks."
        : "Every submission is kept and graded in the sandbox. Submit as often as you like.");
    this.list = el("ol", "submission-list");
    this.list.setAttribute("aria-label", "Submissions, latest first");
    const heading = el("h2", "pane-heading", data.role === "instructor" ? "Submissions" : "Your submissions");
    this.element = el("div", "pane-scroll submissions-pane", heading, tools, hint, this.placeholder, this.list);
  }

  reset(): void {}
  handle(): void {}

  set(items: Submission[]): void {
    this.items = items;
    if (!this.autoOpened && items.length > 0 && this.data.role !== "instructor") this.opened.add(items[0].id);
    this.autoOpened = true;
    this.render();
  }

  /** A submission new or changed: put in its place (latest first). `open`: show its checks. */
  upsert(item: Submission, open = false): void {
    const at = this.items.findIndex((s) => s.id === item.id);
    if (at >= 0) this.items[at] = { ...this.items[at], ...item };
    else this.items.unshift(item);
    if (open) this.opened.add(item.id);
    this.render();
  }

  private render(): void {
    this.placeholder.hidden = this.items.length > 0;
    const total = this.items.length;
    // Each student's submissions are numbered from their first (the list is latest first).
    const numbers = new Map<number, number>();
    const perStudent = new Map<string, number>();
    for (const s of [...this.items].reverse()) {
      const who = studentName(s.student, "");
      perStudent.set(who, (perStudent.get(who) ?? 0) + 1);
      numbers.set(s.id, perStudent.get(who)!);
    }
    const wanted: HTMLElement[] = [];
    this.items.forEach((s) => {
      const number = numbers.get(s.id) ?? 1;
      const shown = `${signature(s)}|${number}`;
      let entry = this.cards.get(s.id);
      if (!entry) {
        const more = el("details", "submission-more") as HTMLDetailsElement;
        const body = el("div", "submission-body");
        more.append(el("summary", null, this.data.role === "instructor" ? "Checks, code and grading log" : "Checks"), body);
        more.addEventListener("toggle", () => {
          if (more.open) this.opened.add(s.id);
          else this.opened.delete(s.id);
          if (more.open) void this.fill(s.id);
        });
        const head = el("div", "submission-head");
        const card = el("li", "submission", head, more);
        entry = { card, head, more, body, shown: "" };
        this.cards.set(s.id, entry);
      }
      if (entry.shown !== shown) {
        entry.shown = shown;
        this.renderHead(entry.head, s, number);
        entry.card.dataset.status = s.status;
        entry.card.dataset.submission = String(s.id);
        if (entry.more.open) void this.fill(s.id);
      }
      if (this.opened.has(s.id) && !entry.more.open) entry.more.open = true;
      wanted.push(entry.card);
    });
    // Reorder without rebuilding: the focus stays where it is.
    wanted.forEach((card, i) => {
      if (this.list.children[i] !== card) this.list.insertBefore(card, this.list.children[i] ?? null);
    });
    while (this.list.children.length > wanted.length) this.list.lastElementChild!.remove();
    this.onChange?.(total || null);
  }

  private renderHead(head: HTMLElement, s: Submission, number: number): void {
    const who = this.data.role === "instructor" ? studentName(s.student, "") : "";
    const when = el("time", "submission-time", ago(s.created_at));
    if (s.created_at) {
      when.dateTime = s.created_at;
      when.title = dateTime(s.created_at);
    }
    const title = el("h3", "submission-title", who ? el("span", "submission-who", who) : null, `Submission ${number}`);
    const meta = el("div", "submission-meta", when);
    if (s.late) meta.append(el("span", "chip chip-warn", "late"));
    if (s.regrading) meta.append(el("span", "chip chip-accent", "regrading"));
    head.replaceChildren(el("div", "submission-name", title, meta), this.outcome(s));
  }

  private outcome(s: Submission): HTMLElement {
    if (s.status !== "graded") {
      const badge = el("span", "status-badge", s.status === "queued" ? "queued" : "grading");
      badge.dataset.status = s.status === "queued" ? "queued" : "running";
      return badge;
    }
    if (s.results === "after_due" || typeof s.score !== "number") {
      const badge = el("span", "status-badge submitted-badge", "submitted");
      badge.dataset.status = "queued";
      badge.title = "Results after the due date";
      return badge;
    }
    const score = el("span", `score score-${scoreTone(s.score, s.max_score)}`,
      `${points(s.score)} / ${points(s.max_score)}`);
    score.setAttribute("aria-label", `Score: ${points(s.score)} of ${points(s.max_score)} points`);
    return score;
  }

  /** Shows a submission's checks (and, for instructors, its code and the checks' log). */
  private async fill(id: number): Promise<void> {
    const entry = this.cards.get(id);
    const item = this.items.find((s) => s.id === id);
    if (!entry || !item) return;
    const cached = this.details.get(id);
    if (cached && cached.signature === signature(item)) {
      entry.body.replaceChildren(...this.body(cached.detail));
      return;
    }
    if (!entry.body.hasChildNodes()) entry.body.replaceChildren(el("p", "submission-note", "Loading…"));
    try {
      const detail = await getSubmission(id);
      this.details.set(id, { detail, signature: signature(detail) });
      entry.body.replaceChildren(...this.body(detail));
    } catch (error) {
      entry.body.replaceChildren(el("p", "submission-note", `Could not load this submission: ${errorText(error)}`));
    }
  }

  private body(s: Submission): Node[] {
    const nodes: Node[] = [];
    if (s.status !== "graded") {
      nodes.push(el("p", "submission-note", s.status === "queued" ? "Waiting for a grader…" : "Grading in the sandbox…"));
    } else if (s.results === "after_due") {
      const due = this.data.due ? ` (${dateTime(this.data.due)})` : "";
      nodes.push(el("p", "submission-note results-later", `Results after the due date${due}.`));
    } else {
      if (s.message) nodes.push(el("p", "submission-message", s.message));
      if (Array.isArray(s.checks)) nodes.push(checkList(s.checks));
    }
    const instructor = this.data.role === "instructor";
    if (instructor && s.error) nodes.push(textDetails("Grading error (instructors only)", s.error, "submission-error"));
    if (instructor && s.log) nodes.push(textDetails("What the checks printed (instructors only)", s.log));
    if (typeof s.code === "string") nodes.push(textDetails(instructor ? "Code" : "The code you submitted", s.code));
    return nodes;
  }
}

/** An ISO date as a datetime-local field's value, in the reader's time zone. */
function localInput(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function main(data: PageData): void {
  const instructor = data.role === "instructor";
  const readOnly = data.course.archived;
  const draftKey = `assignment:${data.id}`;
  const submitButton = byId<HTMLButtonElement>("submit-button");
  showFlash();
  localizeTimes();
  let submitting = false;
  let followingSubmission = false;

  // A run's results: the workbench's panes, under a tab bar of their own in the Results tab.
  const runBar = el("nav", "tabs run-tabs");
  runBar.setAttribute("role", "tablist");
  runBar.setAttribute("aria-label", "Result views");
  const runPanels = el("div", "tab-panels");
  const results = new ResultsPane(el("div", "results-pane", el("div", "results-subheader", runBar), runPanels));

  // The work in progress: a draft of its own, in this browser and (signed in) on the server.
  const drafts = new Drafts(true);
  let starter = data.starter_code;
  const startingCode = drafts.get(draftKey)?.code ?? starter;
  const bench = new Workbench({
    code: startingCode,
    runKey: `${KEYS.run}:assignment:${data.id}`,
    startRun: (text) => startAssignmentRun(data.id, text),
    onChange: (text) => {
      if (text === starter) drafts.remove(draftKey);
      else drafts.save(draftKey, data.title, text);
      resetButton.disabled = text === starter;
    },
    tabs: { bar: runBar, panels: runPanels },
    views: [results],
    explainErrors: false,
    revealFormatErrors: false,
    readOnly,
    beforeRun: () => {
      followingSubmission = false;
      showResults();
    },
    runsFromPage: () => !(document.activeElement as HTMLElement | null)?.closest("#edit-pane"),
    // A submission's run is its grading: it runs to its end.
    cancellable: () => !followingSubmission,
    onPhase: (phase) => {
      submitButton.disabled = phase !== "idle" || readOnly || submitting;
    },
  });
  const { code, session, status, announcer } = bench;
  const editors: CodeEditor[] = [code];
  void drafts.pull().then((changed) => {
    const draft = drafts.get(draftKey);
    if (changed && draft && code.getCode() === startingCode) code.setCode(draft.code);
  });

  const resetButton = byId<HTMLButtonElement>("reset-code");
  resetButton.disabled = code.getCode() === starter;
  resetButton.addEventListener("click", () => {
    code.setCode(starter);
    drafts.remove(draftKey);
    status.say("Back to the starter code (Ctrl+Z brings your code back).");
    code.editor.focus();
  });

  // The page's tabs: the brief, the submissions, the run's results, the settings.
  const brief = new StaticPane("brief", "Assignment", byId("brief"));
  const submissions = new SubmissionsPane(data, maybeById("submission-tools"));
  const panes: Pane[] = [brief, submissions, results];
  const editForm = maybeById("edit-pane");
  if (instructor && editForm) panes.push(new StaticPane("edit", "Edit", editForm));
  const tabs: Tabs = new Tabs(byId("tabs"), byId("tab-panels"), panes);
  const showResults = (id = "output") => {
    tabs.select("results");
    bench.tabs.select(id);
  };
  bench.output.setIdleHint(`Press Run or ${runShortcut().replace(" ↵", "+Enter")} to run your code. Submit sends it for grading.`);
  bench.output.idle();

  // Submitting: the submission's run is shown as any run; its grade comes when it is graded.
  async function sendSubmission(): Promise<void> {
    if (session.busy || submitting || readOnly) return;
    submitting = true;
    followingSubmission = true;
    submitButton.disabled = true;
    submitButton.setAttribute("aria-busy", "true");
    const text = code.getCode();
    try {
      const made: { submission: NewSubmission | null } = { submission: null };
      await session.startWith(async () => {
        const submission = await submit(data.id, text);
        made.submission = submission;
        return { id: submission.run, status: "queued", device: data.device, ws: submission.ws };
      });
      if (made.submission) {
        const id = made.submission.id;
        submissions.upsert({
          id, assignment: data.id, student: { username: data.username }, status: "queued", score: null,
          max_score: null, late: data.past_due, created_at: new Date().toISOString(), graded_at: null,
          regrading: false, checks: null,
        }, true);
        tabs.select("submissions");
        announcer.say("Submitted. Grading…");
        void follow(id);
      } else {
        showResults();
      }
    } finally {
      submitting = false;
      submitButton.removeAttribute("aria-busy");
      submitButton.disabled = session.busy || readOnly;
    }
  }

  /** Asks about a submission until it is graded; says its result. */
  async function follow(id: number): Promise<void> {
    const until = Date.now() + POLL_FOR_MS;
    while (Date.now() < until) {
      await new Promise((resolve) => window.setTimeout(resolve, POLL_MS));
      let s: Submission;
      try {
        s = await getSubmission(id);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return;
        continue;
      }
      submissions.upsert(s, true);
      if (s.status === "graded") {
        if (s.results === "after_due" || typeof s.score !== "number") {
          announcer.say("Submission received. Results after the due date.");
        } else {
          announcer.say(`Submission graded: ${points(s.score)} of ${points(s.max_score)} points.`);
        }
        return;
      }
    }
  }

  submitButton.addEventListener("click", () => void sendSubmission());
  submitButton.disabled = readOnly;
  bench.start();

  // Devices: sets the page's clock by the server's, and says when the assignment's kind is offline.
  void listDevices().then(
    (list) => {
      const device = findDevice(list, data.device);
      if (!device?.online && !session.id) {
        status.say(`No ${data.device.toUpperCase()} executor is online right now, so runs are refused until one is.`, "warning");
      }
    },
    () => {},
  );

  void listSubmissions(data.id).then(
    (list) => {
      submissions.set(list);
      for (const s of list) if (s.status !== "graded") void follow(s.id);
    },
    (error) => status.say(`Could not load the submissions: ${errorText(error)}`, "error"),
  );

  const regrader = instructor ? bindRegrade(data, submissions) : null;
  if (instructor && editForm) {
    bindEditing(data, editors, tabs, status, regrader, (fresh) => {
      starter = fresh.starter_code;
      resetButton.disabled = code.getCode() === starter;
    });
  }
  if (location.hash === "#edit" && instructor) tabs.select("edit");
  else if (location.hash === "#submissions") tabs.select("submissions");

  const runPanes = new Set(["output", "compiled", "timing", "figures"]);
  Object.assign(window, {
    playground: {
      ...bench.hooks(),
      submit: sendSubmission,
      selectTab: (id: string) => (runPanes.has(id) ? showResults(id) : tabs.select(id)),
      editors: () => editors.map((e) => e.editor),
    },
  });
}

/** Regrade: the latest submission of each student graded again with the current checks, its
 *  progress live (the assignment's last regrade: queued and done), the list following. */
function bindRegrade(data: PageData, submissions: SubmissionsPane): { start(): Promise<void> } | null {
  const button = maybeById<HTMLButtonElement>("regrade-button");
  const progress = maybeById<HTMLProgressElement>("regrade-progress");
  const noteBox = maybeById("regrade-note");
  const error = maybeById("regrade-error");
  if (!button || !progress || !noteBox || !error) return null;
  const note: HTMLElement = noteBox;
  if (data.course.archived) button.disabled = true;
  let following = false;

  const show = (done: number, total: number) => {
    progress.hidden = false;
    progress.max = Math.max(1, total);
    progress.value = Math.min(done, total);
    progress.setAttribute("aria-valuetext", `${done} of ${total} regraded`);
    note.textContent = done >= total
      ? `Regraded ${total} submission${total === 1 ? "" : "s"} with the current checks.`
      : `Regrading: ${done} of ${total} done…`;
  };

  /** Follows the assignment's last regrade until all of its gradings have landed. */
  async function follow(): Promise<void> {
    if (following) return;
    following = true;
    button!.disabled = true;
    const until = Date.now() + POLL_FOR_MS;
    try {
      while (Date.now() < until) {
        let progressNow: { queued: number; done: number } | null = null;
        try {
          const detail = await getAssignment(data.id);
          const r = detail.regrade;
          if (r && typeof r.queued === "number" && typeof r.done === "number") progressNow = { queued: r.queued, done: r.done };
          submissions.set(await listSubmissions(data.id));
        } catch {
          // A moment without the server: ask again.
        }
        if (progressNow) {
          show(progressNow.done, progressNow.queued);
          if (progressNow.done >= progressNow.queued) break;
        }
        await new Promise((resolve) => window.setTimeout(resolve, POLL_MS));
      }
    } finally {
      following = false;
      button!.disabled = data.course.archived;
    }
  }

  async function start(): Promise<void> {
    if (following) return;
    button!.disabled = true;
    setError(error!, null);
    try {
      const { queued } = await regrade(data.id);
      if (!queued) {
        note.textContent = "Nothing to regrade: no one has submitted yet.";
        button!.disabled = data.course.archived;
        return;
      }
      show(0, queued);
    } catch (e) {
      setError(error!, errorText(e));
      button!.disabled = data.course.archived;
      return;
    }
    await follow();
  }

  button.addEventListener("click", () => void start());
  // A regrade still going from before this page opened: its progress.
  void getAssignment(data.id).then((detail) => {
    const r = detail.regrade;
    if (r && typeof r.queued === "number" && typeof r.done === "number" && r.done < r.queued) void follow();
  }, () => {});
  return { start };
}

/** The settings form: title, description, due date, device, limits, starter code, checks. */
function bindEditing(
  data: PageData,
  editors: CodeEditor[],
  tabs: Tabs,
  status: StatusLine,
  regrader: { start(): Promise<void> } | null,
  onSaved: (fresh: AssignmentDetail) => void,
): void {
  const form = byId<HTMLFormElement>("edit-form");
  const error = byId("edit-error");
  const saved = byId("edit-saved");
  const saveButton = byId<HTMLButtonElement>("save-assignment");
  const title = byId<HTMLInputElement>("edit-title");
  const description = byId<HTMLTextAreaElement>("edit-description");
  const due = byId<HTMLInputElement>("edit-due");
  const device = byId<HTMLSelectElement>("edit-device");
  const resultsBefore = byId<HTMLInputElement>("edit-results-before-due");
  const wall = byId<HTMLInputElement>("edit-wall");
  const regradeOffer = byId("regrade-offer");
  due.value = localInput(data.due);
  byId("edit-timezone").textContent = Intl.DateTimeFormat().resolvedOptions().timeZone || "your time zone";
  if (data.course.archived) {
    for (const field of form.querySelectorAll<HTMLInputElement | HTMLButtonElement>("input, textarea, select, button")) {
      field.disabled = true;
    }
  }

  const sub = (id: string, label: string, text: string) => {
    const made = createEditor({
      container: byId(id),
      workerUrl: editorWorkerUrl(),
      code: text,
      theme: currentTheme(),
      onChange: () => (saved.textContent = ""),
      onRun: () => {},
      onLeave: () => focusAfter(byId(id)),
      format: formatCode,
    });
    made.editor.updateOptions({
      ariaLabel: `${label}. Escape leaves the editor; Ctrl+M switches Tab between indenting and moving focus.`,
      readOnly: data.course.archived,
      lineNumbersMinChars: 3,
    });
    editors.push(made);
    return made;
  };
  const starterEditor = sub("edit-starter", "Starter code editor", data.starter_code);
  let checksEditor: CodeEditor | null = null;
  let savedChecks = "";
  const checksHost = byId("edit-checks");
  checksHost.textContent = "Loading the checks…";
  void getAssignment(data.id).then(
    (detail) => {
      checksHost.textContent = "";
      savedChecks = typeof detail.checks === "string" ? detail.checks : "";
      checksEditor = sub("edit-checks", "Hidden checks editor", savedChecks);
      if (detail.limits && typeof detail.limits.wall_s === "number" && !wall.value) wall.value = String(detail.limits.wall_s);
    },
    (e) => {
      checksHost.textContent = `Could not load the checks: ${errorText(e)}`;
    },
  );

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void save();
  });

  async function save(): Promise<void> {
    if (saveButton.disabled) return;
    saveButton.disabled = true;
    saveButton.setAttribute("aria-busy", "true");
    setError(error, null);
    saved.textContent = "";
    regradeOffer.hidden = true;
    const fields: Parameters<typeof updateAssignment>[1] = {
      title: title.value.trim(),
      description: description.value,
      starter_code: starterEditor.getCode(),
      device: device.value,
      due: due.value ? new Date(due.value).toISOString() : null,
      results_before_due: resultsBefore.checked,
    };
    const wallValue = Number(wall.value);
    if (wall.value.trim() && Number.isFinite(wallValue) && wallValue > 0) fields.limits = { wall_s: wallValue };
    const checksChanged = checksEditor !== null && checksEditor.getCode() !== savedChecks;
    if (checksEditor) fields.checks = checksEditor.getCode();
    try {
      await updateAssignment(data.id, fields);
      if (checksEditor) savedChecks = checksEditor.getCode();
      const fresh = await getAssignment(data.id);
      refreshBrief(data, fresh);
      onSaved(fresh);
      saved.textContent = "Saved.";
      status.say("The assignment is saved.");
      if (checksChanged && regrader) regradeOffer.hidden = false;
    } catch (err) {
      setError(error, errorText(err));
      const line = err instanceof ApiError ? /\bline (\d+)/.exec(err.message) : null;
      if (line && checksEditor) {
        checksEditor.editor.revealLineInCenter(Number(line[1]));
        checksEditor.editor.setPosition({ lineNumber: Number(line[1]), column: 1 });
      }
    } finally {
      saveButton.disabled = data.course.archived;
      saveButton.removeAttribute("aria-busy");
    }
  }

  byId("regrade-now").addEventListener("click", () => {
    regradeOffer.hidden = true;
    tabs.select("submissions");
    void regrader?.start();
  });
}

/** The brief and the header after a save: the server's own rendering of the description. */
function refreshBrief(data: PageData, fresh: AssignmentDetail): void {
  data.title = fresh.title;
  data.due = fresh.due;
  data.past_due = Boolean(fresh.late);
  data.results_before_due = fresh.results_before_due;
  data.starter_code = fresh.starter_code;
  byId("brief-title").textContent = fresh.title;
  byId("crumb-assignment").textContent = fresh.title;
  document.title = `${fresh.title} · ${data.course.title} · JAX Playground`;
  byId("brief-description").innerHTML = fresh.description_html || "";
  byId("brief-description").hidden = !fresh.description_html;
  byId("brief-due").textContent = fresh.due ? dateTime(fresh.due) : "No due date";
  byId("brief-device").textContent = (fresh.device || data.device).toUpperCase();
  const max = maybeById("brief-max");
  if (max) max.textContent = points(fresh.max_score);
  byId("brief-results").textContent = fresh.results_before_due
    ? "Scores and checks show as soon as a submission is graded."
    : "Scores and checks show after the due date.";
}

const pageInfo = pageData<PageData>("assignment-data");
if (pageInfo) main(pageInfo);
