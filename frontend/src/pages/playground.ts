// The playground page: the workbench (editor, result panes, runs) with the page's own parts
// around it: the examples and drafts, key bindings and the shortcuts panel, the Libraries menu,
// the device picker, Share and Download, and on a shared snippet's page or its embed the saved
// run.
import "../style.css";

import { startRun } from "../api";
import { DevicePicker } from "../devices";
import { byId, downloadText, maybeById } from "../dom";
import { Drafts } from "../drafts";
import { Gallery, migrateOldDrafts, readExamples } from "../gallery";
import { Keymaps } from "../keymaps";
import { LibrariesMenu } from "../libraries";
import { isMac } from "../platform";
import { ShareDialog } from "../share";
import { ShortcutsDialog } from "../shortcuts";
import { driftNotice, loadRunEvents, readableDate, readSnippetData } from "../snippet";
import { KEYS } from "../storage";
import { themeFromQuery } from "../theme";
import { Workbench } from "../workbench";

const DEFAULT_CODE = `import jax
import jax.numpy as jnp

def f(x):
    return x + x * x + x * x * x

fast_f = jax.jit(f)          # compiled with XLA
df = jax.grad(f)             # derivative of f

x = jnp.arange(5.0)
print("f(x)  =", fast_f(x))
print("f'(2) =", df(2.0))
print("devices:", jax.devices())
`;

function main(): void {
  const deviceSelect = byId<HTMLSelectElement>("device-select");
  // A shared snippet's page (/s/<slug>) or its embed (/embed/<slug>).
  const snippet = readSnippetData();
  const embed = document.body.dataset.embed === "true";
  const examples = embed ? [] : readExamples();
  const forcedTheme = embed ? themeFromQuery() : null;

  // The person's drafts (their own code, each example and snippet they edited) live in
  // localStorage, and on the server too when they are signed in. An embed never touches them.
  const examplesButton = maybeById<HTMLButtonElement>("examples-button");
  let gallery: Gallery | null = null;
  if (examplesButton && !embed) {
    const drafts = new Drafts(document.body.dataset.signedIn === "true");
    migrateOldDrafts(drafts, examples, DEFAULT_CODE);
    gallery = new Gallery({
      examples,
      drafts,
      elements: {
        button: examplesButton,
        menu: byId("examples-menu"),
        fileName: byId("file-name"),
        reset: byId("reset-code"),
        restore: byId("restore-code"),
      },
      defaultCode: DEFAULT_CODE,
      say: (text, tone) => bench.status.say(text, tone),
      base: snippet
        ? { slug: snippet.slug, fileName: `${snippet.slug}.py`, title: snippet.title || "Untitled snippet", code: snippet.code }
        : null,
    });
    const startingCode = gallery.startingCode;
    void drafts.pull().then((changed) => {
      if (changed) gallery?.refresh(bench.code.getCode() === startingCode);
    });
  }

  const librariesButton = maybeById<HTMLButtonElement>("libraries-button");
  const librariesMenu = maybeById("libraries-menu");
  const libraries = librariesButton && librariesMenu ? new LibrariesMenu(librariesButton, librariesMenu) : null;
  // Which run the panes show and whether it has finished: a share keeps it as the output.
  let shownFinished = false;
  const runCodes = new Map<string, string>();
  let share: ShareDialog | null = null;
  let shortcuts: ShortcutsDialog | null = null;

  const bench = new Workbench({
    code: gallery ? gallery.startingCode : (snippet?.code ?? DEFAULT_CODE),
    // A snippet page remembers the run it shows apart from the home page's, so that opening a
    // link never shows another page's run in place of the snippet's own output.
    runKey: snippet ? `${KEYS.run}:${embed ? "embed" : "s"}:${snippet.slug}` : KEYS.run,
    startRun: async (text) => {
      const device = devices.value ?? deviceSelect.value ?? "cpu";
      // The snippet's own code, unchanged: a snippet saved without output keeps this run as its own.
      const run = await startRun(text, device || "cpu", snippet && text === snippet.code ? snippet.slug : null);
      runCodes.set(run.id, text);
      return run;
    },
    forcedTheme,
    onChange: () => gallery?.edited(),
    onSave: embed ? undefined : () => share?.open(),
    onHelp: () => shortcuts?.open(),
    // Not while the Share dialog is open: the person is writing a title, not asking for a run.
    runsFromPage: () => !share?.isOpen,
    views: [{
      reset: () => (shownFinished = false),
      idle: () => (shownFinished = false),
      handle: (event) => {
        if (event.type === "finished") shownFinished = true;
      },
    }],
    // A saved run's library versions are not today's.
    liveViews: libraries ? [{ reset: () => {}, handle: (event) => libraries.handle(event) }] : [],
  });
  const code = bench.code;

  // Key bindings (Standard, Vim, Emacs) and the shortcuts panel (F1), where the page has them.
  const keymapStatus = maybeById("keymap-status");
  const keymaps = keymapStatus ? new Keymaps(code.editor, keymapStatus, code.setVimMode) : null;
  shortcuts = keymaps && !embed ? new ShortcutsDialog(keymaps) : null;
  if (keymaps && Keymaps.saved() !== "standard") void keymaps.use(Keymaps.saved());
  maybeById("shortcuts-button")?.addEventListener("click", () => shortcuts?.open());

  gallery?.attach({
    getCode: code.getCode,
    setCode: (text) => {
      code.setCode(text);
      code.editor.setPosition({ lineNumber: 1, column: 1 });
      code.editor.revealLine(1);
      code.editor.focus();
    },
  });

  document.getElementById("download-code")?.addEventListener("click", () => {
    downloadText(code.getCode(), byId("file-name").textContent || "snippet.py");
  });

  const snippetNotice = maybeById("snippet-notice");
  const devices = new DevicePicker(deviceSelect, {
    onProblem: (problem) => {
      if (problem) bench.notice(problem, "warning");
    },
    onChoice: (device) => libraries?.fromDevice(device),
    preferred: snippet?.device ?? null,
    onList: (list) => {
      if (!snippet || !snippetNotice) return;
      const notice = driftNotice(snippet, list);
      snippetNotice.textContent = notice ?? "";
      snippetNotice.hidden = notice === null;
    },
  });

  /** The run the snippet was saved with: kept for "Saved output", and shown as the run when
   *  the page has no run of its own. Only read: nothing runs. */
  async function showSavedRun(id: string, asCurrent: boolean): Promise<void> {
    if (asCurrent) bench.status.say("Loading the saved output…");
    let saved: Awaited<ReturnType<typeof loadRunEvents>>;
    try {
      saved = await loadRunEvents(id);
    } catch (error) {
      if (asCurrent) bench.notice(`Could not load the saved output: ${(error as Error).message}`, "error");
      return;
    }
    bench.output.setSaved(saved.events, readableDate(saved.finishedAt) || "earlier");
    if (!asCurrent || bench.session.busy || bench.session.id) return;
    bench.showSaved(saved.events);
  }

  const shareDialog = maybeById<HTMLDialogElement>("share-dialog");
  const shareButton = maybeById<HTMLButtonElement>("share-button");
  if (shareDialog && !embed) {
    share = new ShareDialog(shareDialog, {
      getCode: code.getCode,
      // The device chosen, a kind or a specific kind (gpu:h200): the run shared keeps its output
      // only when it ran there.
      getDevice: () => devices.value ?? deviceSelect.value ?? snippet?.device ?? "cpu",
      lastRun: () => {
        const id = bench.session.id;
        if (id) return { id, code: runCodes.get(id) ?? null, finished: shownFinished };
        if (snippet?.run) return { id: snippet.run, code: snippet.code, finished: shownFinished };
        return null;
      },
      parent: snippet?.slug ?? null,
    });
    const save = isMac() ? "⌘S" : "Ctrl+S";
    if (shareButton) {
      shareButton.title = `Share a link to this code (${save})`;
      shareButton.setAttribute("aria-keyshortcuts", isMac() ? "Meta+S" : "Control+S");
      shareButton.addEventListener("click", () => share?.open());
    }
  }

  document.addEventListener("keydown", (e) => {
    if (e.key === "F1" && shortcuts && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      shortcuts.open();
      return;
    }
    if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
    if ((e.key === "s" || e.key === "S") && share) {
      // Ctrl/Cmd+S shares instead of saving the page.
      e.preventDefault();
      share.open();
    }
  });

  if (snippet && !snippet.run) {
    const keys = isMac() ? "⌘+Enter" : "Ctrl+Enter";
    bench.output.setIdleHint(`This snippet has not been run yet. Run (${keys}) runs it.`);
    bench.output.idle();
  }
  const resumed = bench.start();
  // (A run picked up again may be the saved one itself: the snippet's first run.)
  if (snippet?.run && bench.session.id !== snippet.run) void showSavedRun(snippet.run, !resumed);
  void devices.start();

  // For tests and for poking at the page from the console.
  Object.assign(window, {
    playground: {
      ...bench.hooks(),
      openExample: (slug: string) => gallery?.openExample(slug) ?? false,
      share: () => share?.open(),
      snippet: snippet?.slug ?? null,
    },
  });
}

main();
