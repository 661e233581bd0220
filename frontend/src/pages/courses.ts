// The course pages without an editor: the list of one's courses (/courses/), the join link
// (/courses/join/<code>) and a course (/courses/<id>/). The server renders what they show; this
// script does what changes something, through the JSON API, then shows the page again.

// The stylesheets of what the page shows, in cascade order (frontend/README.md, Styles).
import "../styles/base.css";
import "../styles/controls.css";
import "../styles/header.css";
import "../styles/dialogs.css";
import "../panes/output.css";
import "../course-page.css";
import "./courses.css";
// The dashboard's page links this bundle's stylesheet too (courses/templates/courses/base.html):
// until it links its own (dashboard.css, from pages/dashboard.ts), what it shows comes here as well.
import "../dashboard/dashboard.css";
import "../dashboard/cell-detail.css";

import {
  addInstructor,
  archiveCourse,
  createAssignment,
  createCourse,
  joinCourse,
  removeMember,
} from "../course-api";
import {
  bindDialog, errorText, flashNext, localizeTimes, setError, showFlash,
} from "../course-page";
import { byId, copyText, maybeById } from "../dom";
import { bindHeader } from "../header";
import { language, t } from "../i18n";

/** `text` as Python comment lines of at most `width` characters: broken at spaces, or anywhere
 *  in a text without them (Chinese). */
function commentLines(text: string, width = 96): string[] {
  const lines: string[] = [];
  let line = "";
  const spaced = text.includes(" ");
  for (const word of spaced ? text.split(" ") : Array.from(text)) {
    const next = line === "" ? word : spaced ? `${line} ${word}` : line + word;
    if (next.length + 2 > width && line !== "") {
      lines.push(line);
      line = word;
    } else {
      line = next;
    }
  }
  if (line !== "") lines.push(line);
  return lines.map((l) => `# ${l}`);
}

/** The checks a new assignment starts with, in the page's language: how to write them, and
 *  nothing that counts yet. */
function checksTemplate(): string {
  const width = language === "zh-hans" ? 60 : 96;
  const said = [
    t("Hidden checks: students never see this code."),
    // Where checks run: the one sentence the authoring form and the guide (/courses/checks)
    // say too, in both languages (tests/courses/test_teaching_pages.py).
    t("The checks run after the student's code, in a process of their own: the checker, a sandboxed runner that no student code ever runs in."),
    t("A name the checks use but do not define is the student's: the checker asks their runner for it."),
    t("Each check has a name, points and a message the student sees."),
    t("How checks work, with helpers and examples: {url}", { url: `${location.origin}/courses/checks` }),
  ];
  return [
    ...said.flatMap((sentence) => commentLines(sentence, width)),
    "from jaxplay.grading import check, allclose",
    "",
    `# check("f(2) is 4", allclose(f(2.0), 4.0), points=1)`,
    "#",
    "# with check(\"keeps the shape\", points=1):",
    `#     assert f(jnp.ones(3)).shape == (3,), "f(x) must have x's shape"`,
    "",
  ].join("\n");
}

/** Runs `action` while `button` shows it is busy; errors go to `errorBox`. */
async function busy(button: HTMLButtonElement, errorBox: HTMLElement, action: () => Promise<void>): Promise<void> {
  if (button.disabled) return;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  setError(errorBox, null);
  try {
    await action();
  } catch (error) {
    setError(errorBox, errorText(error));
    button.disabled = false;
  } finally {
    button.removeAttribute("aria-busy");
  }
}

function go(path: string, flash?: string): void {
  if (flash) flashNext(flash);
  window.location.assign(path);
}

function reload(flash?: string): void {
  if (flash) flashNext(flash);
  window.location.reload();
}

/** /courses/: create a course, join one with a code. */
function bindListPage(): void {
  const createForm = maybeById<HTMLFormElement>("create-course-form");
  if (createForm) {
    const title = byId<HTMLInputElement>("course-title");
    const error = byId("create-course-error");
    createForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const button = createForm.querySelector<HTMLButtonElement>("button[type=submit]")!;
      void busy(button, error, async () => {
        const course = await createCourse(title.value.trim());
        go(`/courses/${course.id}/`, t("Course “{title}” created. Students join it with the code {code}.", { title: course.title, code: course.join_code }));
      });
    });
  }
  const joinForm = maybeById<HTMLFormElement>("join-form");
  if (joinForm) {
    const code = byId<HTMLInputElement>("join-code");
    const error = byId("join-error");
    joinForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const button = joinForm.querySelector<HTMLButtonElement>("button[type=submit]")!;
      void busy(button, error, async () => {
        const course = await joinCourse(code.value.trim().toUpperCase());
        go(`/courses/${course.id}/`, t("You joined “{title}”.", { title: course.title }));
      });
    });
  }
}

/** /courses/join/<code>: one button. */
function bindJoinPage(): void {
  const button = maybeById<HTMLButtonElement>("join-button");
  if (!button) return;
  const error = byId("join-error");
  button.addEventListener("click", () => {
    void busy(button, error, async () => {
      const course = await joinCourse(button.dataset.code ?? "");
      go(`/courses/${course.id}/`, t("You joined “{title}”.", { title: course.title }));
    });
  });
}

/** A yes/no question in the page's <dialog id="confirm-dialog">: resolves to the answer. */
function confirmAction(title: string, text: string, confirm: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>("confirm-dialog");
  byId("confirm-heading").textContent = title;
  byId("confirm-text").textContent = text;
  const ok = byId<HTMLButtonElement>("confirm-ok");
  ok.textContent = confirm;
  return new Promise((resolve) => {
    const done = () => {
      dialog.removeEventListener("close", done);
      resolve(dialog.returnValue === "ok");
    };
    dialog.returnValue = "";
    dialog.addEventListener("close", done);
    dialog.showModal();
  });
}

/** /courses/<id>/: an instructor's tools. */
function bindCoursePage(): void {
  const main = maybeById("course-main");
  if (!main) return;
  const courseId = Number(main.dataset.course);
  const pageError = byId("course-error");

  const copyButton = maybeById<HTMLButtonElement>("copy-join-link");
  if (copyButton) {
    const link = byId<HTMLInputElement>("join-link");
    const note = byId("join-link-note");
    copyButton.addEventListener("click", async () => {
      const ok = await copyText(link.value, link);
      note.textContent = ok ? t("Link copied") : t("Select the link and copy it");
      note.dataset.tone = ok ? "ok" : "warning";
    });
  }

  const newButton = maybeById<HTMLButtonElement>("new-assignment");
  const newDialog = maybeById<HTMLDialogElement>("new-assignment-dialog");
  if (newButton && newDialog) {
    const dialog = bindDialog(newDialog);
    const form = byId<HTMLFormElement>("new-assignment-form");
    const title = byId<HTMLInputElement>("assignment-title");
    const error = byId("new-assignment-error");
    newButton.addEventListener("click", () => {
      setError(error, null);
      dialog.open();
      title.focus();
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const button = form.querySelector<HTMLButtonElement>("button[type=submit]")!;
      void busy(button, error, async () => {
        const made = await createAssignment(courseId, {
          title: title.value.trim(), description: "", starter_code: "", checks: checksTemplate(),
        });
        go(`/assignments/${made.id}/#edit`, t("Assignment created: describe it, give it starter code and checks, then save."));
      });
    });
  }

  const addForm = maybeById<HTMLFormElement>("add-instructor-form");
  if (addForm) {
    const username = byId<HTMLInputElement>("instructor-username");
    const error = byId("add-instructor-error");
    addForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const button = addForm.querySelector<HTMLButtonElement>("button[type=submit]")!;
      void busy(button, error, async () => {
        const name = username.value.trim();
        await addInstructor(courseId, name);
        reload(t("{name} is invited to teach this course: they join it when they accept.", { name }));
      });
    });
  }

  for (const button of document.querySelectorAll<HTMLButtonElement>("button[data-remove-member]")) {
    button.addEventListener("click", async () => {
      const name = button.dataset.username ?? t("this student");
      const yes = await confirmAction(t("Remove {name}?", { name }),
        t("{name} leaves the course and no longer sees it. Their submissions are kept.", { name }), t("Remove"));
      if (!yes) return;
      void busy(button, pageError, async () => {
        await removeMember(courseId, Number(button.dataset.removeMember));
        reload(t("{name} was removed from the course.", { name }));
      });
    });
  }

  const archive = maybeById<HTMLButtonElement>("archive-course");
  if (archive) {
    archive.addEventListener("click", async () => {
      const yes = await confirmAction(t("Archive this course?"),
        t("Everyone keeps seeing it, read-only: nobody can join, run or submit any more. This cannot be undone here."),
        t("Archive"));
      if (!yes) return;
      void busy(archive, pageError, async () => {
        await archiveCourse(courseId);
        reload(t("The course is archived: it is read-only now."));
      });
    });
  }
}

function main(): void {
  bindHeader();
  showFlash();
  localizeTimes();
  bindListPage();
  bindJoinPage();
  bindCoursePage();
}

main();
