// On an instructor's assignment page: the assignment's validation (the checks on the reference
// solution and on the starter code, graded as a submission is each time a save changes what is
// graded, followed until both land), and the students' grades whose checks crashed, which need
// a regrade once the checks are fixed.
import { getAssignment, type AssignmentDetail, type CheckError, type Validation, type ValidationRun } from "../course-api";
import { checkList, compose, listOf, points, textDetails } from "../course-page";
import { el } from "../dom";
import { t, tn } from "../i18n";
import { POLL_FOR_MS, POLL_MS } from "./model";

const KINDS = [
  { kind: "reference", title: t("Reference solution"), none: t("No reference solution: add one below, and saving checks that it gets every point.") },
  { kind: "starter", title: t("Starter code"), none: t("No starter code to check.") },
] as const;

function pending(validation: Validation | null | undefined): boolean {
  return Boolean(validation && [validation.reference, validation.starter].some((r) => r && r.status !== "graded"));
}

function names(list: string[]): string {
  const quoted = listOf(list.slice(0, 6).map((n) => `“${n}”`));
  return list.length > 6 ? t("{names} and {n} more", { names: quoted, n: list.length - 6 }) : quoted;
}

/** What a graded run of a validation says, in a sentence, and its tone. */
function verdict(kind: "reference" | "starter", run: ValidationRun): { text: string; tone: "ok" | "bad" | "warn" } {
  const crashed = run.checks.filter((c) => c.crashed).map((c) => c.name);
  if (crashed.length > 0) {
    return { text: t("The checks crashed on it: {names} could not run. Their traceback is below.", { names: names(crashed) }), tone: "bad" };
  }
  const failed = run.checks.filter((c) => !c.passed).map((c) => c.name);
  if (kind === "reference") {
    return run.ok
      ? { text: t("Gets every point, as it should."), tone: "ok" }
      : {
          text: failed.length
            ? t("Does not get every point: {names} failed.", { names: names(failed) })
            : t("Does not get every point: the checks did not finish."),
          tone: "bad",
        };
  }
  return run.ok
    ? { text: t("Does not get every point, as starter code should not."), tone: "ok" }
    : { text: t("Already gets every point: the checks may not test the work students are asked to do."), tone: "warn" };
}

/** The validation's two runs and the crashed grades' notice, kept up to date from the API. */
export class ValidationView {
  private following = false;

  constructor(private readonly id: number, private readonly host: HTMLElement | null, private readonly crashes: HTMLElement | null) {}

  /** The assignment as the API answered it: shown, and followed while a run has not landed. */
  show(detail: AssignmentDetail): void {
    this.render(detail.validation ?? null);
    this.showCrashes(detail.check_errors ?? null);
    if (pending(detail.validation)) void this.follow();
  }

  /** Students' latest grades whose checks crashed: how many, which checks, the traceback. */
  showCrashes(crash: CheckError | null): void {
    const box = this.crashes;
    if (!box) return;
    box.hidden = !crash;
    if (!crash) {
      box.replaceChildren();
      return;
    }
    const n = crash.submissions;
    const lead = crash.checks.length
      ? tn("{crashed} on {n} student’s latest submission: {names} could not run. Those grades are provisional. Fix the checks in the Edit tab, then Regrade all.",
        "{crashed} on {n} students’ latest submissions: {names} could not run. Those grades are provisional. Fix the checks in the Edit tab, then Regrade all.",
        n, { n, names: names(crash.checks) })
      : tn("{crashed} on {n} student’s latest submission. Those grades are provisional. Fix the checks in the Edit tab, then Regrade all.",
        "{crashed} on {n} students’ latest submissions. Those grades are provisional. Fix the checks in the Edit tab, then Regrade all.",
        n, { n });
    box.replaceChildren(
      el("p", "crash-lead", ...compose(lead, { crashed: el("strong", null, t("The checks crashed")) })),
      textDetails(t("Traceback (the newest)"), crash.error || t("(none was sent)"), "submission-error"),
    );
  }

  private async follow(): Promise<void> {
    if (this.following) return;
    this.following = true;
    const until = Date.now() + POLL_FOR_MS;
    try {
      while (Date.now() < until) {
        await new Promise((resolve) => window.setTimeout(resolve, POLL_MS));
        let detail: AssignmentDetail;
        try {
          detail = await getAssignment(this.id);
        } catch {
          continue; // a moment without the server: ask again
        }
        this.render(detail.validation ?? null);
        this.showCrashes(detail.check_errors ?? null);
        if (!pending(detail.validation)) return;
      }
    } finally {
      this.following = false;
    }
  }

  private render(validation: Validation | null): void {
    const host = this.host;
    if (!host) return;
    if (!validation) {
      host.replaceChildren(el("p", "validation-empty",
        t("Not validated yet: saving the assignment with checks grades the reference solution and the starter code with them.")));
      return;
    }
    const nodes: Node[] = [];
    if (validation.skipped) {
      nodes.push(el("p", "notice notice-warning validation-skipped", t("Not validated at the last save: {reason}.", { reason: validation.skipped })));
    }
    for (const { kind, title, none } of KINDS) {
      const run = validation[kind];
      if (!run) {
        if (!validation.skipped) nodes.push(el("div", "validation-run validation-none", el("span", "validation-name", title), el("p", "validation-verdict", none)));
        continue;
      }
      nodes.push(this.card(kind, title, run));
    }
    host.replaceChildren(...nodes);
  }

  private card(kind: "reference" | "starter", title: string, run: ValidationRun): HTMLElement {
    const card = el("div", "validation-run");
    card.dataset.kind = kind;
    const head = el("div", "validation-head", el("span", "validation-name", title));
    card.append(head);
    if (run.status !== "graded") {
      const badge = el("span", "status-badge", run.status === "queued" ? t("queued") : t("grading"));
      badge.dataset.status = run.status === "queued" ? "queued" : "running";
      head.append(badge);
      card.append(el("p", "validation-verdict", t("Grading: the code runs, then the checks as saved, in the checker…")));
      return card;
    }
    const { text, tone } = verdict(kind, run);
    card.dataset.ok = String(Boolean(run.ok));
    card.dataset.tone = tone;
    // The score's own colour says how it went for the reference; a starter's low score is no success.
    const toneClass = tone === "bad" ? "score-bad" : tone === "warn" ? "score-part" : kind === "reference" ? "score-ok" : "";
    const score = el("span", `score ${toneClass}`.trim(), `${points(run.score)} / ${points(run.max_score)}`);
    score.setAttribute("aria-label", t("{title}: {score} of {max} points", { title, score: points(run.score), max: points(run.max_score) }));
    head.append(score);
    const line = el("p", "validation-verdict", text);
    line.dataset.tone = tone;
    card.append(line);
    const checks = el("details", "submission-details validation-checks", el("summary", null, t("Checks ({n})", { n: run.checks.length })), checkList(run.checks));
    checks.open = tone !== "ok";
    card.append(checks);
    if (run.error) card.append(textDetails(t("Tracebacks (yours only)"), run.error, "submission-error"));
    if (run.log) card.append(textDetails(t("What the checks printed"), run.log));
    return card;
  }
}
