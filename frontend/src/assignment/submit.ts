// Submit on an assignment's page: the submission's run shown as any run (its grading: it runs to
// its end, so no Cancel), the submission put at the top of the Submissions tab, and its grade
// followed until it comes, then said to a screen reader.
import { ApiError } from "../api";
import { getSubmission, listSubmissions, submit, type NewSubmission, type Submission } from "../course-api";
import { errorText, points } from "../course-page";
import { byId } from "../dom";
import { t } from "../i18n";
import type { Tabs } from "../panes/pane";
import type { RunPhase } from "../run";
import type { Workbench } from "../workbench";
import { POLL_FOR_MS, POLL_MS, type AssignmentData } from "./model";
import type { SubmissionsPane } from "./submissions";

export class Submitter {
  private readonly button = byId<HTMLButtonElement>("submit-button");
  private readonly readOnly: boolean;
  private submitting = false;
  /** The run shown is a submission's. */
  private following = false;

  /** `tabs`: the page's (Submissions among them); `showRun`: shows the run's results. */
  constructor(private readonly data: AssignmentData, private readonly bench: Workbench,
              private readonly submissions: SubmissionsPane, private readonly tabs: Tabs,
              private readonly showRun: () => void) {
    this.readOnly = data.course.archived;
    this.button.addEventListener("click", () => void this.send());
    this.button.disabled = this.readOnly;
  }

  /** A run the person asked for (Run) is starting: no submission's. */
  runStarting(): void {
    this.following = false;
  }

  /** Whether the run shown may be cancelled: a submission's is its grading, which runs to its end. */
  get cancellable(): boolean {
    return !this.following;
  }

  /** The run's phase changed: Submit only while nothing runs. */
  phaseChanged(phase: RunPhase): void {
    this.button.disabled = phase !== "idle" || this.readOnly || this.submitting;
  }

  /** Submits the editor's code; its run is shown as any run, its grade followed. */
  async send(): Promise<void> {
    const { session, announcer } = this.bench;
    if (session.busy || this.submitting || this.readOnly) return;
    this.submitting = true;
    this.following = true;
    this.button.disabled = true;
    this.button.setAttribute("aria-busy", "true");
    const text = this.bench.code.getCode();
    try {
      const made: { submission: NewSubmission | null } = { submission: null };
      await session.startWith(async () => {
        const submission = await submit(this.data.id, text);
        made.submission = submission;
        return { id: submission.run, status: "queued", device: this.data.device, ws: submission.ws };
      });
      if (made.submission) {
        const id = made.submission.id;
        this.submissions.upsert({
          id, assignment: this.data.id, student: { username: this.data.username }, status: "queued", score: null,
          max_score: null, late: this.data.past_due, created_at: new Date().toISOString(), graded_at: null,
          regrading: false, checks: null,
        }, true);
        this.tabs.select(this.submissions.id);
        announcer.say(t("Submitted. Grading…"));
        void this.follow(id);
      } else {
        this.showRun();
      }
    } finally {
      this.submitting = false;
      this.button.removeAttribute("aria-busy");
      this.button.disabled = session.busy || this.readOnly;
    }
  }

  /** Asks about a submission until it is graded; says its result. */
  async follow(id: number): Promise<void> {
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
      this.submissions.upsert(s, true);
      if (s.status === "graded") {
        const { announcer } = this.bench;
        if (s.results === "after_due" || typeof s.score !== "number") {
          announcer.say(t("Submission received. Results after the due date."));
        } else if (s.needs_regrade) {
          announcer.say(t("Submission graded provisionally: a check could not run, and your instructor has been told."));
        } else {
          announcer.say(t("Submission graded: {score} of {max} points.", { score: points(s.score), max: points(s.max_score) }));
        }
        return;
      }
    }
  }

  /** Lists the submissions, and follows those still being graded (from before a reload). */
  load(): void {
    void listSubmissions(this.data.id).then(
      (list) => {
        this.submissions.set(list);
        for (const s of list) if (s.status !== "graded") void this.follow(s.id);
      },
      (error) => this.bench.status.say(t("Could not load the submissions: {error}", { error: errorText(error) }), "error"),
    );
  }
}
