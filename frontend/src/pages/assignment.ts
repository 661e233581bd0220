// An assignment's page (/assignments/<id>/): the workbench with the starter code (or the person's
// draft), its results in a tab of the page's own, Submit, the submissions with their checks and
// score (or "results after the due date"), and, for instructors, the assignment's settings,
// starter code, hidden checks and reference solution, the validation of the checks on the last
// two, the grades whose checks crashed, and Regrade with its progress (src/assignment/).
//
// The hidden checks and the reference solution never reach a student's page: the server renders
// neither, and only an instructor's page asks for them (GET /api/assignments/<id> answers them to
// instructors only).
import "../style.css";
import "../courses.css";

import { ApiError, listDevices } from "../api";
import { bindRegrade } from "../assignment/regrade";
import { POLL_FOR_MS, POLL_MS, type AssignmentData } from "../assignment/model";
import { ResultsPane, StaticPane } from "../assignment/panes";
import { bindEditing } from "../assignment/settings";
import { SubmissionsPane } from "../assignment/submissions";
import { ValidationView } from "../assignment/validation";
import { getSubmission, listSubmissions, startAssignmentRun, submit, type NewSubmission, type Submission } from "../course-api";
import { errorText, localizeTimes, points, showFlash } from "../course-page";
import { findDevice } from "../devices";
import { byId, el, maybeById, pageData } from "../dom";
import { Drafts, RESET_PREFIX } from "../drafts";
import type { CodeEditor } from "../editor";
import { Tabs, type Pane } from "../panes/pane";
import { runShortcut } from "../platform";
import { setAnalysisRuntime } from "../intellisense";
import { KEYS } from "../storage";
import { Workbench } from "../workbench";

function main(data: AssignmentData): void {
  setAnalysisRuntime(data.runtime || null);
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
      // Typing after a Reset: Undo would replace the typing, so the bar goes (the kept code stays).
      if (!restoring) hideUndo();
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

  // Reset to the starter code keeps the code it replaced (a draft of its own, in this browser):
  // "Code reset. Undo" brings it back, after a reload too, until the person types again.
  const resetKey = RESET_PREFIX + draftKey;
  const undoBar = maybeById("undo-bar");
  let restoring = false;
  const hideUndo = () => {
    if (undoBar) undoBar.hidden = true;
  };
  const showUndo = (focus: boolean) => {
    if (!undoBar) return;
    const undo = el("button", "button button-small undo-button", "Undo");
    undo.type = "button";
    undo.title = "Bring back the code you had before Reset";
    undo.addEventListener("click", () => {
      const kept = drafts.get(resetKey);
      hideUndo();
      if (!kept) return;
      drafts.remove(resetKey);
      code.setCode(kept.code);
      code.editor.focus();
    });
    undoBar.replaceChildren(el("span", "undo-text", "Code reset. ", el("span", "undo-sub", "Your code before it is kept.")), undo);
    undoBar.hidden = false;
    if (focus) undo.focus();
  };
  const resetButton = byId<HTMLButtonElement>("reset-code");
  resetButton.disabled = code.getCode() === starter;
  resetButton.addEventListener("click", () => {
    const before = code.getCode();
    restoring = true;
    try {
      code.setCode(starter);
    } finally {
      restoring = false;
    }
    drafts.remove(draftKey);
    if (before !== starter) drafts.save(resetKey, `${data.title} (before Reset)`, before);
    showUndo(true);
  });
  if (drafts.get(resetKey) && code.getCode() === starter) showUndo(false);

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
        } else if (s.needs_regrade) {
          announcer.say("Submission graded provisionally: a check could not run, and your instructor has been told.");
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

  const validation = instructor ? new ValidationView(data.id, maybeById("validation-runs"), maybeById("check-errors")) : null;
  const regrader = instructor ? bindRegrade(data, submissions, (detail) => validation?.showCrashes(detail.check_errors ?? null)) : null;
  if (instructor && editForm && validation) {
    bindEditing(data, editors, tabs, status, regrader, validation, (fresh) => {
      // An attempt still at the old starter code (or empty) follows the new one: the large editor
      // shows what a student starts from.
      const untouched = code.getCode() === starter;
      starter = fresh.starter_code;
      if (untouched && code.getCode() !== starter) code.setCode(starter);
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

const pageInfo = pageData<AssignmentData>("assignment-data");
if (pageInfo) main(pageInfo);
