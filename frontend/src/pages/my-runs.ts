// My runs (/me/runs/): a queued or running run's Cancel, through the API (POST
// /api/runs/<id>/cancel), without leaving the page. The row's status follows the run to its end,
// then the row offers what a finished run's does (Delete, or the snippet that keeps it). Without
// this script the same button's form posts to /me/runs/<id>/cancel/, which calls the same action,
// and the page comes back.
import { ApiError, cancelRun, getRun } from "../api";
import { el } from "../dom";
import { t } from "../i18n";
import { TERMINAL_STATUSES } from "../protocol.gen";

/** How often a cancelled run's status is asked for until it ends. A queued run ends at once; a
 *  running one within a tick of its executor (about a second); one whose executor died, when the
 *  watchdog finds it (about 20 s). */
const POLL_MS = 500;
const POLL_FOR_MS = 40_000;

const region = document.getElementById("runs-status");

function finished(status: string): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** Says `text` in the page's live region (cleared first: the same words again are said again). */
function say(text: string): void {
  if (!region) return;
  region.textContent = "";
  window.setTimeout(() => (region.textContent = text), 50);
}

/** A run's status as the page words it (the API's name stays in the class). */
const STATUS_WORDS: Record<string, string> = {
  queued: t("queued"),
  starting: t("starting"),
  running: t("running"),
  succeeded: t("succeeded"),
  failed: t("failed"),
  timed_out: t("timed out"),
  cancelled: t("cancelled"),
  limit_exceeded: t("limit exceeded"),
  lost: t("lost"),
};

function statusWord(status: string): string {
  return STATUS_WORDS[status] ?? status.replace(/_/g, " ");
}

function showStatus(row: HTMLTableRowElement, status: string): void {
  const badge = row.querySelector<HTMLElement>(".status");
  if (!badge) return;
  badge.className = `status status-${status}`;
  badge.textContent = statusWord(status);
}

/** The row of a run that ended: Delete (a form like the server's), or the snippet that keeps it. */
function showEnded(form: HTMLFormElement, row: HTMLTableRowElement, hadFocus: boolean): void {
  const label = form.dataset.label ?? "";
  const kept = form.dataset.kept ?? "";
  let replacement: HTMLElement;
  if (kept) {
    const link = el("a", null, `/s/${kept}`);
    link.href = `/s/${kept}`;
    const [before, after] = t("Kept: the output of {snippet}").split("{snippet}");
    replacement = el("span", "kept", before, link, after);
  } else {
    const remove = el("form");
    remove.method = "post";
    remove.action = form.dataset.delete ?? "";
    for (const hidden of form.querySelectorAll<HTMLInputElement>("input[type=hidden]")) {
      remove.append(hidden.cloneNode());
    }
    const button = el("button", "button button-danger button-small", t("Delete"));
    button.type = "submit";
    button.setAttribute("aria-label", t("Delete run {label}", { label }));
    remove.append(button);
    replacement = remove;
  }
  form.replaceWith(replacement);
  // The keyboard stays on the row (not on Delete: a second press must not delete the run).
  if (hadFocus) row.querySelector<HTMLElement>(".status")?.focus();
}

async function cancel(form: HTMLFormElement, button: HTMLButtonElement): Promise<void> {
  const row = form.closest("tr");
  const id = form.dataset.run;
  if (!row || !id || button.getAttribute("aria-disabled") === "true") return;
  const label = form.dataset.label ?? "";
  // aria-disabled, not disabled: a disabled button drops the keyboard's focus to the page.
  button.setAttribute("aria-disabled", "true");
  button.textContent = t("Cancelling…");
  let status: string;
  try {
    status = (await cancelRun(id)).status;
  } catch (error) {
    if (error instanceof ApiError && error.status === 409) {
      status = ""; // it ended on its own meanwhile: its status says how
    } else {
      button.removeAttribute("aria-disabled");
      button.textContent = t("Cancel");
      say(t("Could not cancel the run: {error}", { error: (error as Error).message }));
      return;
    }
  }
  if (status) showStatus(row, status);
  const deadline = Date.now() + POLL_FOR_MS;
  while (!finished(status) && Date.now() < deadline) {
    if (status) await new Promise((resolve) => window.setTimeout(resolve, POLL_MS));
    try {
      status = (await getRun(id, { limit: 1 })).status;
      showStatus(row, status);
    } catch {
      status = status || "running"; // the server is away a moment: ask again
    }
  }
  if (!finished(status)) {
    say(t("The run is still stopping; reload the page to see how it ended."));
    return;
  }
  const hadFocus = document.activeElement === button;
  showEnded(form, row, hadFocus);
  say(status === "cancelled" ? t("Run {label} cancelled.", { label }) : t("Run {label} ended: {status}.", { label, status: statusWord(status) }));
}

for (const form of document.querySelectorAll<HTMLFormElement>("form.run-cancel")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const button = form.querySelector<HTMLButtonElement>("button[type=submit]");
    if (button) void cancel(form, button);
  });
}
