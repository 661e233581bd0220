// The dialog a cell of the dashboard opens: the student's latest submission's checks, the latest
// code and the output of the latest run, followed live while it runs.
import { getRun } from "../api";
import { getSubmission, type Submission } from "../course-api";
import { bindDialog, checkList, dateTime, errorText, points, scoreTone, textDetails } from "../course-page";
import { byId, el } from "../dom";
import { RunStream } from "../events";
import { t } from "../i18n";
import { OutputPane } from "../panes/output";
import { loadRunEvents } from "../snippet";
import { statusWord } from "../status";
import { describeCell, type AssignmentInfo, type Cell, type Student } from "./model";

/** The dialog a cell opens: the student's latest submission's checks, the latest code and the
 *  output of the latest run (followed live while it runs). */
export class CellDetail {
  private readonly dialog = byId<HTMLDialogElement>("cell-dialog");
  private readonly control = bindDialog(this.dialog);
  private readonly output: OutputPane;
  private stream: RunStream | null = null;
  private token = 0;

  constructor() {
    this.output = new OutputPane((line) => this.showLine(line));
    byId("cell-output").append(this.output.element);
    this.dialog.addEventListener("close", () => this.stop());
  }

  private stop(): void {
    this.stream?.stop();
    this.stream = null;
    this.token += 1;
  }

  open(student: Student, assignment: AssignmentInfo, cell: Cell): void {
    this.stop();
    const token = this.token;
    byId("cell-heading").textContent = `${student.username} · ${assignment.title}`;
    const summary = byId("cell-summary");
    summary.textContent = describeCell(cell).label;
    const checks = byId("cell-checks");
    const code = byId("cell-code");
    checks.replaceChildren(el("p", "muted", cell.submission === null ? t("No submission yet.") : t("Loading…")));
    code.replaceChildren(el("p", "muted", t("Loading…")));
    byId("cell-output-which").textContent = "";
    this.output.reset();
    this.say(cell.run ? t("Loading…") : t("No run yet."));
    this.control.open();

    let submissionCode: string | null = null;
    const loadSubmission = cell.submission === null ? Promise.resolve(null) : getSubmission(cell.submission).then(
      (s) => {
        if (token !== this.token) return null;
        checks.replaceChildren(...submissionChecks(s));
        submissionCode = typeof s.code === "string" ? s.code : null;
        return s;
      },
      (error) => {
        if (token === this.token) checks.replaceChildren(el("p", "form-error", t("Could not load the submission: {error}", { error: errorText(error) })));
        return null;
      },
    );

    const loadRun = cell.run === null ? Promise.resolve(null) : getRun(cell.run, { limit: 1 }).then(
      (record) => {
        if (token !== this.token) return null;
        const status = statusWord(record.status);
        byId("cell-output-which").textContent = record.created_at
          ? t("· latest run, {status}, {date}", { status, date: dateTime(record.created_at) })
          : t("· latest run, {status}", { status });
        this.follow(record.id, token);
        return record;
      },
      (error) => {
        if (token === this.token) this.say(t("Could not load the run: {error}", { error: errorText(error) }));
        return null;
      },
    );

    void Promise.all([loadSubmission, loadRun]).then(([, record]) => {
      if (token !== this.token) return;
      const runCode = record && typeof record.code === "string" ? record.code : null;
      const shown = runCode ?? submissionCode;
      if (shown === null) {
        code.replaceChildren(el("p", "muted", t("No code to show.")));
        return;
      }
      const nodes: Node[] = [
        el("p", "cell-code-note", runCode !== null ? t("The code of the latest run.") : t("The code of the latest submission.")),
        codeBlock(shown),
      ];
      if (runCode !== null && submissionCode !== null && submissionCode !== runCode) {
        const more = el("details", "submission-details", el("summary", null, t("The code of the latest submission")), codeBlock(submissionCode, false));
        nodes.push(more);
      }
      code.replaceChildren(...nodes);
    });
  }

  /** The run's events, from the first, live while it goes on (stored pages once its log expired). */
  private follow(runId: string, token: number): void {
    this.output.reset();
    const stream = new RunStream(runId, {
      onEvent: (event) => {
        if (token === this.token) this.output.handle(event);
      },
      onUnknownRun: () => {
        void loadRunEvents(runId).then(
          ({ events }) => {
            if (token !== this.token) return;
            this.output.reset();
            for (const event of events) this.output.handle(event);
          },
          (error) => {
            if (token === this.token) this.say(t("Could not load the output: {error}", { error: errorText(error) }));
          },
        );
      },
    });
    this.stream = stream;
  }

  /** A line in the output's place: loading, no run, an error. */
  private say(text: string): void {
    this.output.setIdleHint(text);
    this.output.idle();
  }

  private showLine(line: number): void {
    const target = this.dialog.querySelector<HTMLElement>(`.code-block [data-line="${line}"]`);
    if (!target) return;
    for (const old of this.dialog.querySelectorAll(".code-block .is-marked")) old.classList.remove("is-marked");
    target.classList.add("is-marked");
    target.scrollIntoView({ block: "center" });
  }
}

function submissionChecks(s: Submission): Node[] {
  const nodes: Node[] = [];
  const head = el("p", "cell-submission-head");
  if (s.status !== "graded") head.append(el("span", "status-badge", s.status === "queued" ? t("queued") : t("grading")));
  else if (typeof s.score === "number") {
    head.append(el("span", `score score-${scoreTone(s.score, s.max_score)}`, `${points(s.score)} / ${points(s.max_score)}`));
  }
  head.append(el("span", "muted", " ", t("submitted {date}", { date: dateTime(s.created_at) })));
  if (s.late) head.append(" ", el("span", "chip chip-warn", t("late")));
  if (s.regrading) head.append(" ", el("span", "chip chip-accent", t("regrading")));
  if (s.needs_regrade) head.append(" ", el("span", "chip chip-danger", t("needs regrade: the checks crashed")));
  nodes.push(head);
  if (s.message) nodes.push(el("p", "submission-message", s.message));
  if (Array.isArray(s.checks)) nodes.push(checkList(s.checks));
  for (const [label, text] of [[t("Grading error"), s.error], [t("What the checks printed"), s.log]] as const) {
    if (text) nodes.push(textDetails(label, text));
  }
  return nodes;
}

/** Code with line numbers (a line the output points at can be marked). */
function codeBlock(code: string, numbered = true): HTMLElement {
  const pre = el("pre", `code-block${numbered ? " is-numbered" : ""}`);
  pre.tabIndex = 0;
  pre.setAttribute("aria-label", t("Code"));
  const lines = code.replace(/\n$/, "").split("\n");
  lines.forEach((line, i) => {
    const span = el("span", "code-line", line || " ");
    span.dataset.line = String(i + 1);
    pre.append(span);
  });
  return pre;
}
