// Regrade, on an instructor's assignment page.
import { getAssignment, listSubmissions, regrade, type AssignmentDetail } from "../course-api";
import { errorText, setError } from "../course-page";
import { maybeById } from "../dom";
import { t, tn } from "../i18n";
import { POLL_FOR_MS, POLL_MS, type AssignmentData } from "./model";
import type { SubmissionsPane } from "./submissions";

/** Regrade: the latest submission of each student graded again with the current checks, its
 *  progress live (the assignment's last regrade: queued and done), the list following, and the
 *  assignment as each poll answers it to ``onDetail`` (the grades whose checks crashed). */
export function bindRegrade(data: AssignmentData, submissions: SubmissionsPane,
                            onDetail: (detail: AssignmentDetail) => void = () => {}): { start(): Promise<void> } | null {
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
    progress.setAttribute("aria-valuetext", t("{done} of {total} regraded", { done, total }));
    note.textContent = done >= total
      ? tn("Regraded {n} submission with the current checks.", "Regraded {n} submissions with the current checks.", total, { n: total })
      : t("Regrading: {done} of {total} done…", { done, total });
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
          onDetail(detail);
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
        note.textContent = t("Nothing to regrade: no one has submitted yet.");
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
