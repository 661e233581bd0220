// The assignment's settings, on an instructor's page: the form, its starter code, hidden checks
// and reference solution editors, the brief brought up to date after a save, and the validation
// a save starts (./validation.ts).
import { ApiError, formatCode } from "../api";
import { getAssignment, updateAssignment, type AssignmentDetail } from "../course-api";
import { dateTime, errorText, points, setError } from "../course-page";
import { byId, focusAfter, maybeById } from "../dom";
import { setAnalysisRuntime } from "../intellisense";
import { createEditor, type CodeEditor } from "../editor";
import { t } from "../i18n";
import type { Tabs } from "../panes/pane";
import type { StatusLine } from "../status";
import { currentTheme } from "../theme";
import { editorWorkerUrl } from "../workbench";
import type { AssignmentData } from "./model";
import type { ValidationView } from "./validation";

/** An ISO date as a datetime-local field's value, in the reader's time zone. */
function localInput(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The settings form: title, description, due date, device, limits, starter code, checks and
 *  reference solution (the last two hidden from students, asked of the API). */
export function bindEditing(
  data: AssignmentData,
  editors: CodeEditor[],
  tabs: Tabs,
  status: StatusLine,
  regrader: { start(): Promise<void> } | null,
  validation: ValidationView,
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
  const runtime = maybeById<HTMLSelectElement>("edit-runtime");
  const resultsBefore = byId<HTMLInputElement>("edit-results-before-due");
  const wall = byId<HTMLInputElement>("edit-wall");
  const regradeOffer = byId("regrade-offer");
  due.value = localInput(data.due);
  byId("edit-timezone").textContent = Intl.DateTimeFormat().resolvedOptions().timeZone || t("your time zone");
  if (data.course.archived) {
    for (const field of form.querySelectorAll<HTMLInputElement | HTMLButtonElement>("input, textarea, select, button")) {
      field.disabled = true;
    }
  }

  const sub = (id: string, label: string, text: string, problems = true) => {
    const made = createEditor({
      problems,
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
      ariaLabel: t("{label}. Escape leaves the editor; Ctrl+M switches Tab between indenting and moving focus.", { label }),
      readOnly: data.course.archived,
      lineNumbersMinChars: 3,
    });
    editors.push(made);
    return made;
  };
  const starterEditor = sub("edit-starter", t("Starter code editor"), data.starter_code);
  // The attempt (the large editor, editors[0]) written first becomes the starter code in a click.
  maybeById("edit-starter-from-attempt")?.addEventListener("click", () => {
    starterEditor.setCode(editors[0].getCode());
    starterEditor.editor.focus();
  });
  let checksEditor: CodeEditor | null = null;
  let referenceEditor: CodeEditor | null = null;
  let savedChecks = "";
  const checksHost = byId("edit-checks");
  const referenceHost = byId("edit-reference");
  checksHost.textContent = t("Loading the checks…");
  referenceHost.textContent = t("Loading the reference solution…");
  void getAssignment(data.id).then(
    (detail) => {
      checksHost.textContent = "";
      referenceHost.textContent = "";
      savedChecks = typeof detail.checks === "string" ? detail.checks : "";
      checksEditor = sub("edit-checks", t("Hidden checks editor"), savedChecks, false); // the names it reads are the student's
      referenceEditor = sub("edit-reference", t("Reference solution editor"),
        typeof detail.reference_solution === "string" ? detail.reference_solution : "");
      if (detail.limits && typeof detail.limits.wall_s === "number" && !wall.value) wall.value = String(detail.limits.wall_s);
      validation.show(detail);
    },
    (e) => {
      checksHost.textContent = t("Could not load the checks: {error}", { error: errorText(e) });
      referenceHost.textContent = t("Could not load the reference solution: {error}", { error: errorText(e) });
    },
  );
  maybeById("edit-reference-from-attempt")?.addEventListener("click", () => {
    if (!referenceEditor) return;
    referenceEditor.setCode(editors[0].getCode());
    referenceEditor.editor.focus();
  });

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
      ...(runtime ? { runtime: runtime.value } : {}),
      due: due.value ? new Date(due.value).toISOString() : null,
      results_before_due: resultsBefore.checked,
    };
    const wallValue = Number(wall.value);
    if (wall.value.trim() && Number.isFinite(wallValue) && wallValue > 0) fields.limits = { wall_s: wallValue };
    const checksChanged = checksEditor !== null && checksEditor.getCode() !== savedChecks;
    if (checksEditor) fields.checks = checksEditor.getCode();
    if (referenceEditor) fields.reference_solution = referenceEditor.getCode();
    try {
      await updateAssignment(data.id, fields);
      if (checksEditor) savedChecks = checksEditor.getCode();
      const fresh = await getAssignment(data.id);
      refreshBrief(data, fresh);
      onSaved(fresh);
      validation.show(fresh);
      saved.textContent = t("Saved.");
      status.say(t("The assignment is saved."));
      // Only when there is something to regrade: a new assignment's first checks change no grade.
      if (checksChanged && regrader && (fresh.submissions ?? 0) > 0) regradeOffer.hidden = false;
      // The verdict of what was just saved, in view: it is below the form's fold.
      byId("validation-heading").scrollIntoView({ behavior: "smooth", block: "start" });
    } catch (err) {
      setError(error, errorText(err));
      // The server says where the checks break: "line 3", or in Chinese "第 3 行".
      const match = err instanceof ApiError ? /\bline (\d+)|第\s*(\d+)\s*行/.exec(err.message) : null;
      const line = match ? Number(match[1] ?? match[2]) : 0;
      if (line && checksEditor) {
        checksEditor.editor.revealLineInCenter(line);
        checksEditor.editor.setPosition({ lineNumber: line, column: 1 });
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
function refreshBrief(data: AssignmentData, fresh: AssignmentDetail): void {
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
  // One or the other: the description, or the line that says there is none yet.
  const none = maybeById("brief-no-description");
  if (none) none.hidden = Boolean(fresh.description_html);
  byId("brief-due").textContent = fresh.due ? dateTime(fresh.due) : t("No due date");
  if (fresh.runtime) {
    data.runtime = fresh.runtime;
    setAnalysisRuntime(fresh.runtime);
  }
  // A runtime's id is "jax-<its version>": the brief says "CPU · JAX 0.4.38".
  byId("brief-device").textContent = `${(fresh.device || data.device).toUpperCase()} · ${data.runtime.replace(/^jax-/, "JAX ")}`;
  const max = maybeById("brief-max");
  if (max) max.textContent = points(fresh.max_score);
  byId("brief-results").textContent = fresh.results_before_due
    ? t("Scores and checks show as soon as a submission is graded.")
    : t("Scores and checks show after the due date.");
}
