// An assignment's page (/assignments/<id>/): the workbench with the starter code (or the person's
// draft), the run's Input (what Run's run reads as its standard input; a submission reads none)
// and Reset (src/assignment/reset.ts), its results in a tab of the page's own, Submit
// (submit.ts), the submissions with their checks and score (or "results after the due date"),
// and, for instructors, the assignment's settings, starter code, hidden checks and reference
// solution, the validation of the checks on the last two, the grades whose checks crashed, and
// Regrade with its progress (src/assignment/).
//
// The hidden checks and the reference solution never reach a student's page: the server renders
// neither, and only an instructor's page asks for them (GET /api/assignments/<id> answers them to
// instructors only).

// The stylesheets of what the page shows, in cascade order (frontend/README.md, Styles).
import "../styles/base.css";
import "../styles/controls.css";
import "../styles/header.css";
import "../styles/dialogs.css";
import "../workbench.css";
import "../stdin.css";
import "../panes/pane.css";
import "../panes/output.css";
import "../panes/compiled.css";
import "../panes/timing.css";
import "../panes/figures.css";
import "../panes/timeline.css";
import "../course-page.css";
import "../assignment/assignment.css";
import "../assignment/submissions.css";
import "../assignment/settings.css";
import "../assignment/validation.css";

import { listDevices, request, type CreatedRun } from "../api";
import type { AssignmentData } from "../assignment/model";
import { ResultsPane, StaticPane } from "../assignment/panes";
import { bindRegrade } from "../assignment/regrade";
import { bindReset } from "../assignment/reset";
import { bindEditing } from "../assignment/settings";
import { Submitter } from "../assignment/submit";
import { SubmissionsPane } from "../assignment/submissions";
import { ValidationView } from "../assignment/validation";
import { startAssignmentRun } from "../course-api";
import { localizeTimes, showFlash } from "../course-page";
import { findDevice } from "../devices";
import { byId, el, maybeById, pageData } from "../dom";
import { Drafts, Inputs } from "../drafts";
import type { CodeEditor } from "../editor";
import { t } from "../i18n";
import { setAnalysisRuntime } from "../intellisense";
import { Tabs, type Pane } from "../panes/pane";
import { runShortcut } from "../platform";
import { KEYS } from "../storage";
import { Workbench } from "../workbench";

function main(data: AssignmentData): void {
  setAnalysisRuntime(data.runtime || null);
  const instructor = data.role === "instructor";
  showFlash();
  localizeTimes();

  // A run's results: the workbench's panes, under a tab bar of their own in the Results tab.
  const runBar = el("nav", "tabs run-tabs");
  runBar.setAttribute("role", "tablist");
  runBar.setAttribute("aria-label", t("Result views"));
  const runPanels = el("div", "tab-panels");
  const results = new ResultsPane(el("div", "results-pane", el("div", "results-subheader", runBar), runPanels));

  // The work in progress: a draft of its own, in this browser and (signed in) on the server.
  const drafts = new Drafts(true);
  const draftKey = `assignment:${data.id}`;
  const startingCode = drafts.get(draftKey)?.code ?? data.starter_code;
  const inputs = new Inputs();
  const bench = new Workbench({
    code: startingCode,
    runKey: `${KEYS.run}:assignment:${data.id}`,
    startRun: (text, _options, stdin = "") => stdin
      ? request<CreatedRun>("POST", `/api/assignments/${data.id}/runs`, { code: text, stdin })
      : startAssignmentRun(data.id, text),
    input: { text: inputs.get(draftKey) ?? "", onChange: (text) => inputs.save(draftKey, text) },
    onChange: (text) => reset.edited(text),
    tabs: { bar: runBar, panels: runPanels },
    views: [results],
    explainErrors: false,
    revealFormatErrors: false,
    readOnly: data.course.archived,
    beforeRun: () => {
      submitter.runStarting();
      showResults();
    },
    runsFromPage: () => !(document.activeElement as HTMLElement | null)?.closest("#edit-pane"),
    cancellable: () => submitter.cancellable,
    onPhase: (phase) => submitter.phaseChanged(phase),
  });
  const { code, status } = bench;
  const editors: CodeEditor[] = [code];
  void drafts.pull().then((changed) => {
    const draft = drafts.get(draftKey);
    if (changed && draft && code.getCode() === startingCode) code.setCode(draft.code);
  });
  // Reset to the starter code, with "Code reset. Undo" (src/assignment/reset.ts).
  const reset = bindReset(code, drafts, draftKey, data);

  // The page's tabs: the brief, the submissions, the run's results, the settings.
  const brief = new StaticPane("brief", t("Assignment"), byId("brief"));
  const submissions = new SubmissionsPane(data, maybeById("submission-tools"));
  const panes: Pane[] = [brief, submissions, results];
  const editForm = maybeById("edit-pane");
  if (instructor && editForm) panes.push(new StaticPane("edit", t("Edit"), editForm));
  const tabs: Tabs = new Tabs(byId("tabs"), byId("tab-panels"), panes);
  const showResults = (id = bench.output.id) => {
    tabs.select(results.id);
    bench.tabs.select(id);
  };
  bench.output.setIdleHint(t("Press Run or {keys} to run your code. Submit sends it for grading.", { keys: runShortcut().replace(" ↵", "+Enter") }));
  bench.output.idle();

  // Submit: the submission's run shown as any run, its grade followed (src/assignment/submit.ts).
  const submitter = new Submitter(data, bench, submissions, tabs, () => showResults());
  bench.start();

  // Devices: sets the page's clock by the server's, and says when the assignment's kind is offline.
  void listDevices().then(
    (list) => {
      const device = findDevice(list, data.device);
      if (!device?.online && !bench.session.id) {
        status.say(t("No {device} executor is online right now, so runs are refused until one is.", { device: data.device.toUpperCase() }), "warning");
      }
    },
    () => {},
  );
  submitter.load();

  const validation = instructor ? new ValidationView(data.id, maybeById("validation-runs"), maybeById("check-errors")) : null;
  const regrader = instructor ? bindRegrade(data, submissions, (detail) => validation?.showCrashes(detail.check_errors ?? null)) : null;
  if (instructor && editForm && validation) {
    bindEditing(data, editors, tabs, status, regrader, validation, (fresh) => reset.starterChanged(fresh.starter_code));
  }
  if (location.hash === "#edit" && instructor) tabs.select("edit");
  else if (location.hash === "#submissions") tabs.select(submissions.id);

  Object.assign(window, {
    playground: {
      ...bench.hooks(),
      submit: () => submitter.send(),
      selectTab: (id: string) => (bench.paneIds.includes(id) ? showResults(id) : tabs.select(id)),
      editors: () => editors.map((e) => e.editor),
    },
  });
}

const pageInfo = pageData<AssignmentData>("assignment-data");
if (pageInfo) main(pageInfo);
