// The Submissions tab of an assignment's page.
import { getSubmission, studentName, type Submission } from "../course-api";
import { ago, checkList, dateTime, errorText, points, scoreTone, textDetails } from "../course-page";
import { el } from "../dom";
import { t } from "../i18n";
import type { Pane } from "../panes/pane";
import type { AssignmentData } from "./model";

/** What makes a submission's shown details out of date. */
function signature(s: Submission): string {
  return [s.status, s.score, s.max_score, s.graded_at, s.regrading, s.needs_regrade, s.results].join("|");
}

/** The submissions: a student's own, or, for an instructor, everyone's; latest first. Each
 *  opens on its checks (fetched when opened: the list has only the scores). */
export class SubmissionsPane implements Pane {
  readonly id = "submissions";
  readonly title = t("Submissions");
  readonly element: HTMLElement;
  onChange?: (count: number | null) => void;
  private readonly list: HTMLElement;
  private readonly placeholder: HTMLElement;
  private items: Submission[] = [];
  private readonly cards = new Map<number, { card: HTMLElement; head: HTMLElement; more: HTMLDetailsElement; body: HTMLElement; shown: string }>();
  private readonly details = new Map<number, { detail: Submission; signature: string }>();
  private readonly opened = new Set<number>();
  private autoOpened = false;

  constructor(private readonly data: AssignmentData, tools: HTMLElement | null) {
    this.placeholder = el("p", "submissions-empty",
      data.role === "instructor" ? t("No submissions yet.") : t("You have not submitted yet. Submit sends your code for grading."));
    const hint = el("p", "submissions-hint",
      data.role === "instructor"
        ? t("Everyone's submissions, latest first. Instructors may submit too, to try the checks.")
        : t("Every submission is kept and graded: your code runs first, then the checks run in the checker, a sandboxed runner that your code never runs in. Submit as often as you like."));
    this.list = el("ol", "submission-list");
    this.list.setAttribute("aria-label", t("Submissions, latest first"));
    const heading = el("h2", "pane-heading", data.role === "instructor" ? t("Submissions") : t("Your submissions"));
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
        more.append(el("summary", null, this.data.role === "instructor" ? t("Checks, code and grading log") : t("Checks")), body);
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
    const title = el("h3", "submission-title", who ? el("span", "submission-who", who) : null, t("Submission {n}", { n: number }));
    const meta = el("div", "submission-meta", when);
    if (s.late) meta.append(el("span", "chip chip-warn", t("late")));
    if (s.regrading) meta.append(el("span", "chip chip-accent", t("regrading")));
    if (s.needs_regrade) {
      const instructor = this.data.role === "instructor";
      const chip = el("span", instructor ? "chip chip-danger" : "chip chip-warn", instructor ? t("needs regrade") : t("provisional"));
      chip.title = instructor
        ? t("A check could not run because the checks raised: fix them, then regrade")
        : t("A check could not run because of a problem in the checks; your instructor has been told");
      meta.append(chip);
    }
    head.replaceChildren(el("div", "submission-name", title, meta), this.outcome(s));
  }

  private outcome(s: Submission): HTMLElement {
    if (s.status !== "graded") {
      const badge = el("span", "status-badge", s.status === "queued" ? t("queued") : t("grading"));
      badge.dataset.status = s.status === "queued" ? "queued" : "running";
      return badge;
    }
    if (s.results === "after_due" || typeof s.score !== "number") {
      const badge = el("span", "status-badge submitted-badge", t("submitted"));
      badge.dataset.status = "queued";
      badge.title = t("Results after the due date");
      return badge;
    }
    if (s.needs_regrade) {
      // Not a score to judge by: a check could not run, the checks' fault.
      const score = el("span", "score score-provisional", `${points(s.score)} / ${points(s.max_score)}`);
      score.setAttribute("aria-label", t("Provisional score: {score} of {max} points, until a regrade",
        { score: points(s.score), max: points(s.max_score) }));
      return score;
    }
    const score = el("span", `score score-${scoreTone(s.score, s.max_score)}`,
      `${points(s.score)} / ${points(s.max_score)}`);
    score.setAttribute("aria-label", t("Score: {score} of {max} points", { score: points(s.score), max: points(s.max_score) }));
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
    if (!entry.body.hasChildNodes()) entry.body.replaceChildren(el("p", "submission-note", t("Loading…")));
    try {
      const detail = await getSubmission(id);
      this.details.set(id, { detail, signature: signature(detail) });
      entry.body.replaceChildren(...this.body(detail));
    } catch (error) {
      entry.body.replaceChildren(el("p", "submission-note", t("Could not load this submission: {error}", { error: errorText(error) })));
    }
  }

  private body(s: Submission): Node[] {
    const nodes: Node[] = [];
    if (s.status !== "graded") {
      nodes.push(el("p", "submission-note", s.status === "queued" ? t("Waiting for a grader…") : t("Grading: the code runs, then the checks in the checker…")));
    } else if (s.results === "after_due") {
      const later = this.data.due
        ? t("Results after the due date ({due}).", { due: dateTime(this.data.due) })
        : t("Results after the due date.");
      nodes.push(el("p", "submission-note results-later", later));
    } else {
      if (s.message) nodes.push(el("p", "submission-message", s.message));
      if (Array.isArray(s.checks)) nodes.push(checkList(s.checks));
    }
    const instructor = this.data.role === "instructor";
    if (instructor && s.error) nodes.push(textDetails(t("Grading error (instructors only)"), s.error, "submission-error"));
    if (instructor && s.log) nodes.push(textDetails(t("What the checks printed (instructors only)"), s.log));
    if (typeof s.code === "string") nodes.push(textDetails(instructor ? t("Code") : t("The code you submitted"), s.code));
    return nodes;
  }
}
