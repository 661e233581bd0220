// `notebook.js`: a notebook's page (/notebooks/new, /notebooks/<id>, a shared one at /n/<slug>):
// the cells (src/notebook/), the live session's line and Restore, the toolbar (Run all, Run
// stale, Run above, Interrupt, Restart, Share, Import, Export, Fork), the device and JAX version
// pickers, and saving (the browser's copy, and the server's for a signed-in person).

// The stylesheets of what the page shows, in cascade order (frontend/README.md, Styles).
import "../styles/base.css";
import "../styles/controls.css";
import "../styles/header.css";
import "../styles/dialogs.css";
import "../workbench.css";
import "../panes/pane.css";
import "../panes/output.css";
import "../panes/compiled.css";
import "../panes/timing.css";
import "../panes/figures.css";
import "../panes/timeline.css";
import "./playground.css";
import "../notebook/notebook.css";
import "../notebook/cell.css";

import { DevicePicker } from "../devices";
import { byId, el, maybeById } from "../dom";
import { bindHeader } from "../header";
import { t, tn } from "../i18n";
import { themeName } from "../languages";
import { monaco } from "../monaco";
import { RuntimePicker } from "../runtimes";
import { loadRunEvents } from "../snippet";
import { editorWorkerUrl } from "../workbench";
import { ProfileToggle } from "../profile/toggle";
import { downloadFile, fileName, forkShared, importFile, NotebookShareDialog } from "../notebook/files";
import {
  copyKey, draftUrl, hasWriting, latestDraft, LIST_SEPARATOR, setLatestDraft, readCopy, readNotebookData, sameCells, toIpynb, writeCopy, type LocalCell, type LocalCopy,
} from "../notebook/model";
import { Notebook, type SessionLine } from "../notebook/notebook";
import { Saver, type SaveState } from "../notebook/saver";

const DEFAULT_TITLE = t("Untitled notebook");
// How many of the session's names the Restart dialog lists before "and N more".
const RESTART_NAMES_SHOWN = 12;

/** `template` with its one "{names}" placeholder replaced by the node `names`. */
function sentence(template: string, names: Node): (string | Node)[] {
  const at = template.indexOf("{names}");
  return at < 0 ? [template] : [template.slice(0, at), names, template.slice(at + "{names}".length)];
}

function notebookPage(): void {
  const data = readNotebookData();
  const readOnly = !data.editable;
  // Signed out, "New notebook" opens the draft written last, at its own address.
  if (!readOnly && data.id === null && !data.signed_in) {
    data.draft ??= latestDraft();
    if (data.draft) {
      setLatestDraft(data.draft);
      history.replaceState(null, "", draftUrl(data.draft));
    }
  }
  const key = copyKey(data.id, data.draft);
  const copy = readOnly ? null : readCopy(key);
  const notices: { text: string; action?: { label: string; run(): void } }[] = [];

  // What the page opens on: the server's notebook, or the browser's copy when it is newer (a
  // draft; edits the server has not got yet). What each cell last ran is the browser's to know.
  let title = data.title;
  let cells: LocalCell[] = data.cells;
  let runtime = data.runtime;
  let device = data.device;
  let synced = data.id !== null;
  let sessionId: string | null = null;
  if (copy) {
    const serverHasMore = data.id === null && hasWriting(data.cells) && !sameCells(copy.cells, data.cells);
    const copyIsNewer = data.id === null ? !serverHasMore : !copy.synced && (!sameCells(copy.cells, data.cells) || copy.title !== data.title);
    if (copyIsNewer) {
      title = copy.title;
      cells = copy.cells;
      runtime = copy.runtime || runtime;
      device = copy.device || device;
      synced = copy.synced;
      sessionId = copy.session;
      if (data.id !== null) notices.push({ text: t("Restored the edits this browser kept, which the server had not saved yet.") });
    } else {
      // The server's cells, with what this browser knows of their runs.
      const ran = new Map(copy.cells.map((c) => [c.id, c]));
      cells = data.cells.map((c) => {
        const mine = ran.get(c.id);
        return mine?.ran && mine.source === c.source ? { ...c, ran: mine.ran, run: c.run ?? mine.run } : c;
      });
      sessionId = copy.session;
      if (serverHasMore && hasWriting(copy.cells)) {
        // Opened from a link (a snippet, an import) over a draft: the draft is kept aside.
        writeCopy(`${key}.replaced`, copy);
        notices.push({
          text: t("Your earlier draft in this browser is kept aside."),
          action: { label: t("Bring it back"), run: () => bringBack(copy) },
        });
      }
    }
  }

  const titleInput = maybeById<HTMLInputElement>("notebook-title");
  if (titleInput) titleInput.value = title;
  const heading = byId("notebook-heading");
  const showTitle = () => {
    const shown = (titleInput ? titleInput.value.trim() : title) || DEFAULT_TITLE;
    heading.textContent = shown;
    document.title = `${shown} · JAX Playground`;
  };
  showTitle();

  // The toolbar's pickers: where a new session runs.
  const deviceSelect = maybeById<HTMLSelectElement>("device-select");
  const runtimeSelect = maybeById<HTMLSelectElement>("runtime-select");
  const runtimes = runtimeSelect ? new RuntimePicker(runtimeSelect, runtime || null) : null;
  const devices = deviceSelect
    ? new DevicePicker(deviceSelect, {
        onProblem: (problem) => {
          if (problem) notify(problem, "warning");
        },
        preferred: device || null,
        withJax: runtimes === null,
      })
    : null;
  const where = () => ({
    runtime: runtimes?.value ?? (runtime || null),
    device: devices?.value ?? (deviceSelect?.value || device || null),
  });

  // Messages: one at a time, with an action when there is one (Undo).
  const noticeBox = byId("notebook-notice");
  let noticeTimer: number | undefined;
  function notify(text: string, tone: "muted" | "warning" | "error", action?: { label: string; run(): void }): void {
    window.clearTimeout(noticeTimer);
    const close = el("button", "button button-icon button-quiet notice-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", t("Dismiss"));
    close.addEventListener("click", () => (noticeBox.hidden = true));
    const parts: Node[] = [el("span", "notice-text", text)];
    if (action) {
      const button = el("button", "button button-small", action.label);
      button.type = "button";
      button.addEventListener("click", () => {
        noticeBox.hidden = true;
        action.run();
      });
      parts.push(button);
    }
    noticeBox.replaceChildren(...parts, close);
    noticeBox.dataset.tone = tone;
    noticeBox.hidden = false;
    if (tone === "muted") noticeTimer = window.setTimeout(() => (noticeBox.hidden = true), action ? 10_000 : 5000);
  }

  // The session's line, and the toolbar's buttons as the runs go.
  const sessionState = maybeById("session-state");
  const sessionText = maybeById("session-text");
  const restoreButton = maybeById<HTMLButtonElement>("restore-button");
  const progress = maybeById<HTMLProgressElement>("restore-progress");
  const showSession = (line: SessionLine) => {
    if (!sessionState || !sessionText) return;
    sessionState.dataset.phase = line.phase;
    if (sessionText.textContent !== line.text) sessionText.replaceChildren(...(line.content ?? [line.text]));
    if (restoreButton) restoreButton.hidden = !line.restorable;
    if (progress) {
      progress.hidden = line.progress === null;
      if (line.progress) {
        progress.max = Math.max(1, line.progress.of);
        progress.value = line.progress.done;
        progress.setAttribute("aria-label", line.text);
      }
    }
  };
  const staleCount = maybeById("stale-count");
  const runStale = maybeById<HTMLButtonElement>("run-stale");
  const interrupt = maybeById<HTMLButtonElement>("interrupt-button");
  const showCounts = (stale: number, busy: boolean) => {
    if (staleCount) {
      staleCount.hidden = stale === 0;
      staleCount.textContent = String(stale);
    }
    if (runStale) runStale.disabled = stale === 0;
    if (interrupt) interrupt.disabled = !busy;
  };

  let saver: Saver | null = null;
  const list = byId("cells");
  const runAll = maybeById<HTMLButtonElement>("run-all");
  const profile = runAll && !readOnly ? new ProfileToggle(runAll) : null;
  const notebook = new Notebook({
    profile: () => profile?.on ?? false,
    list,
    cells,
    readOnly,
    runKeyPrefix: `${key}.run`,
    workerUrl: editorWorkerUrl(),
    where,
    changed: () => saver?.changed(),
    onSession: showSession,
    notify,
    onCounts: showCounts,
  });
  document.getElementById("notebook-loading")?.remove();

  const snapshot = () => {
    const w = where();
    return {
      title: titleInput ? titleInput.value : title,
      cells: notebook.data(),
      runtime: w.runtime ?? "",
      device: w.device ?? "",
      session: notebook.session.lastId,
    };
  };
  const saveState = maybeById("save-state") ?? el("span");
  const showSave = (state: SaveState) => {
    saveState.dataset.state = state.kind;
    switch (state.kind) {
      case "local":
        saveState.textContent = data.signed_in ? "" : t("Kept in this browser");
        saveState.title = data.signed_in ? "" : t("Sign in to keep your notebooks on the site and open them anywhere.");
        break;
      case "saving":
        saveState.textContent = t("Saving…");
        break;
      case "saved":
        saveState.textContent = t("Saved");
        saveState.title = "";
        break;
      case "failed":
        saveState.textContent = t("Not saved: kept in this browser");
        saveState.title = state.message;
        break;
      case "conflict": {
        saveState.textContent = t("Changed elsewhere");
        const mine = notebook.data();
        if (sameCells(mine, state.theirs.cells)) {
          void saver?.keepMine(state.theirs.version);
          break;
        }
        notify(t("This notebook was saved from another page meanwhile. Your edits stay here and in this browser: Keep mine saves them over the other version."), "warning", {
          label: t("Keep mine"),
          run: () => void saver?.keepMine(state.theirs.version),
        });
        break;
      }
    }
  };
  if (!readOnly) {
    saver = new Saver(data, snapshot, showSave, (id) => {
      // The new notebook has a page of its own now: the address says so (a reload opens it).
      history.replaceState(null, "", `/notebooks/${id}`);
    }, data.version ?? copy?.version ?? null, synced, (draft) => history.replaceState(null, "", draftUrl(draft)));
    showSave(saver.current);
    saver.flushLocal();
    if (!synced) saver.changed();
  }
  titleInput?.addEventListener("input", () => {
    showTitle();
    saver?.changed();
  });

  const changedWhere = () => {
    saver?.changed();
    if (notebook.session.id) notify(t("The session keeps running where it started: Restart to use the new choice."), "muted");
  };
  deviceSelect?.addEventListener("change", changedWhere);
  runtimeSelect?.addEventListener("change", changedWhere);

  // The toolbar.
  const on = (id: string, handler: () => void) => maybeById(id)?.addEventListener("click", handler);
  on("run-all", () => void notebook.runAll());
  on("run-stale", () => void notebook.runStale());
  on("run-above", () => void notebook.runAbove());
  on("interrupt-button", () => notebook.interrupt());
  // Restart asks first, naming what is lost (the session's names) and what is kept (the cells):
  // one click must not throw away a long training run's state.
  const restartDialog = maybeById<HTMLDialogElement>("restart-dialog");
  on("restart-button", () => {
    const { names, cells: ran } = notebook.sessionNames();
    if (!restartDialog || ran === 0) {
      void notebook.restart();
      return;
    }
    const lost = byId("restart-lost");
    const shown = names.slice(0, RESTART_NAMES_SHOWN);
    const list = el("span", null, ...shown.flatMap((name, i) => [...(i ? [LIST_SEPARATOR] : []), el("code", null, name)]),
      names.length > shown.length ? t(" and {n} more", { n: names.length - shown.length }) : "");
    lost.replaceChildren(...(names.length
      ? sentence(tn("Lost: what {n} cell defined in this session, {names}.", "Lost: what {n} cells defined in this session, {names}.", ran, { n: ran }), list)
      : [tn("Lost: what {n} cell left in this session.", "Lost: what {n} cells left in this session.", ran, { n: ran })]));
    restartDialog.showModal();
    byId("restart-confirm").focus();
  });
  restartDialog?.querySelectorAll<HTMLElement>("[data-close]").forEach((b) => b.addEventListener("click", () => restartDialog.close()));
  on("restart-confirm", () => {
    restartDialog?.close();
    void notebook.restart();
  });
  on("restore-button", () => void notebook.restore());
  on("add-code", () => addAtEnd("code"));
  on("add-markdown", () => addAtEnd("markdown"));
  const keysButton = maybeById<HTMLButtonElement>("keys-button");
  keysButton?.addEventListener("click", () => {
    const keys = byId("notebook-keys");
    keys.hidden = !keys.hidden;
    keysButton.setAttribute("aria-expanded", String(!keys.hidden));
  });
  function addAtEnd(type: "code" | "markdown"): void {
    const cell = notebook.insert(notebook.cells.length, type);
    notebook.select(cell);
    cell.edit();
  }

  const exportButton = maybeById<HTMLButtonElement>("export-button");
  exportButton?.addEventListener("click", () => {
    const name = titleInput?.value ?? title;
    if (data.id && saver?.current.kind === "saved") {
      location.href = `/notebooks/${encodeURIComponent(data.id)}.ipynb`;
      return;
    }
    const byId = new Map(notebook.cells.map((c) => [c.id, c]));
    const text = toIpynb(name, notebook.data(), (id) => byId.get(id)?.outputs() ?? { streams: [], error: null });
    downloadFile(text, fileName(name), "application/x-ipynb+json");
  });

  const importInput = maybeById<HTMLInputElement>("import-file");
  on("import-button", () => importInput?.click());
  importInput?.addEventListener("change", () => {
    const file = importInput.files?.[0];
    importInput.value = "";
    if (file) void importNotebook(file);
  });
  async function importNotebook(file: File): Promise<void> {
    let imported;
    try {
      imported = await importFile(file);
    } catch (error) {
      notify(t("Could not import {file}: {error}", { file: file.name, error: (error as Error).message }), "error");
      return;
    }
    const before: LocalCopy = { ...snapshot(), savedAt: Date.now(), synced: false, version: null };
    const had = hasWriting(notebook.data());
    if (titleInput) titleInput.value = imported.title;
    showTitle();
    notebook.replaceCells(imported.cells);
    if (had) {
      // What was here is one click away, and kept aside in the browser as well.
      writeCopy(`${key}.replaced`, before);
      notify(t("Imported {file} over the cells that were here.", { file: file.name }), "muted", { label: t("Undo"), run: () => bringBack(before) });
    } else {
      notify(t("Imported {file}.", { file: file.name }), "muted");
    }
  }
  function bringBack(previous: LocalCopy): void {
    if (titleInput) titleInput.value = previous.title;
    showTitle();
    notebook.replaceCells(previous.cells);
  }

  const forkButton = maybeById<HTMLButtonElement>("fork-button");
  forkButton?.addEventListener("click", async () => {
    if (!data.shared) return;
    forkButton.disabled = true;
    try {
      const forked = await forkShared(data.shared.slug);
      if ("url" in forked) {
        location.href = forked.url;
        return;
      }
      // The fork is the draft "New notebook" opens: the one written last (kept aside first).
      const draft = copyKey(null, latestDraft());
      const existing = readCopy(draft);
      if (existing && hasWriting(existing.cells)) writeCopy(`${draft}.replaced`, existing);
      writeCopy(draft, {
        title: forked.title, cells: forked.cells, runtime: data.runtime, device: data.device,
        savedAt: Date.now(), synced: false, version: null, session: null,
      });
      location.href = "/notebooks/new";
    } catch (error) {
      notify(t("Could not fork: {error}", { error: (error as Error).message }), "error");
      forkButton.disabled = false;
    }
  });

  const shareDialog = maybeById<HTMLDialogElement>("share-dialog");
  const share = shareDialog && !readOnly
    ? new NotebookShareDialog(shareDialog, () => {
        const w = where();
        return {
          title: titleInput?.value.trim() ?? title,
          runtime: w.runtime ?? "",
          device: w.device ?? "cpu",
          cells: notebook.cells.map((cell) => {
            const ran = cell.data.ran;
            const keep = cell.type === "code" && cell.data.run && ran && ran.source === cell.source && cell.phase === "idle";
            return { type: cell.type, source: cell.source, ...(keep ? { run: cell.data.run! } : {}) };
          }),
        };
      })
    : null;
  on("share-button", () => share?.show());

  document.addEventListener("keydown", (e) => {
    if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || (e.key !== "s" && e.key !== "S")) return;
    // Ctrl/Cmd+S saves now, instead of saving the page.
    e.preventDefault();
    saver?.flushLocal();
    void saver?.save();
  });

  bindHeader((theme) => monaco.editor.setTheme(themeName(theme)));

  if (data.import_error) notify(data.import_error, "error");
  for (const n of notices) notify(n.text, "muted", n.action);

  if (readOnly) {
    // A shared notebook's outputs: each cell's saved run.
    for (const cell of notebook.cells) {
      const run = cell.data.run;
      if (cell.type !== "code" || !run) continue;
      void loadRunEvents(run).then(({ events }) => cell.showSaved(events)).catch(() => {
        cell.results.status.say(t("This cell's saved output is no longer available."));
      });
    }
  } else {
    void notebook.pickUp(sessionId).then(() => notebook.resumeRuns());
    void devices?.start();
    void runtimes?.refresh(where().device ?? "cpu");
  }

  // For tests and for poking at the page from the console.
  Object.assign(window, {
    notebook: {
      count: () => notebook.cells.length,
      types: () => notebook.cells.map((c) => c.type),
      code: (i: number) => notebook.cells[i]?.source,
      setCode: (i: number, code: string) => notebook.cells[i]?.setSource(code),
      stale: () => notebook.cells.map((c) => c.element.dataset.stale === "true"),
      /** What cell i defines and reads, as the server said for its code as it is now (null: not yet). */
      names: (i: number) => notebook.namesOf(i),
      problems: (i: number) => {
        const model = notebook.cells[i]?.editor?.editor.getModel();
        return model ? monaco.editor.getModelMarkers({ resource: model.uri }).map((m) => `${m.owner} ${String(typeof m.code === "object" ? m.code?.value : m.code)} ${m.message}`) : [];
      },
      compiledNames: (i: number) => notebook.cells[i]?.results.compiled?.names() ?? [],
      runId: (i: number) => notebook.cells[i]?.session.id ?? null,
      session: () => notebook.session.lastId,
      /** How its cells were sent: on the session's socket, or posted. */
      sent: () => ({ ...notebook.session.sent }),
      runAll: () => notebook.runAll(),
      save: () => saver?.save(),
    },
  });
}

notebookPage();
