// The playground page: wires the editor, the device picker, the run session and the result
// panes together. Each of those lives in its own module; this one only connects them.
import "../style.css";

import { Announcer } from "../announce";
import { formatCode } from "../api";
import { DevicePicker } from "../devices";
import { byId, downloadText, focusAfter, maybeById } from "../dom";
import { clampFontSize, createEditor, DEFAULT_FONT_SIZE } from "../editor";
import { Drafts } from "../drafts";
import { bindHeader } from "../header";
import { Gallery, migrateOldDrafts, readExamples } from "../gallery";
import { Keymaps } from "../keymaps";
import { LibrariesMenu } from "../libraries";
import { CompiledPane } from "../panes/compiled";
import { FiguresPane } from "../panes/figures";
import { OutputPane } from "../panes/output";
import { Tabs, type Pane } from "../panes/pane";
import { TimingPane } from "../panes/timing";
import { isMac, runShortcut } from "../platform";
import { RunSession, type RunView } from "../run";
import { ShareDialog } from "../share";
import { ShortcutsDialog } from "../shortcuts";
import { driftNotice, loadRunEvents, readableDate, readSnippetData } from "../snippet";
import { StatusLine } from "../status";
import { KEYS, local } from "../storage";
import { bindSplitter } from "../split";
import { currentTheme, themeFromQuery } from "../theme";

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
  const runButton = byId<HTMLButtonElement>("run-button");
  const cancelButton = byId<HTMLButtonElement>("cancel-button");
  const deviceSelect = byId<HTMLSelectElement>("device-select");
  // A shared snippet's page (/s/<slug>) or its embed (/embed/<slug>).
  const snippet = readSnippetData();
  const embed = document.body.dataset.embed === "true";
  const examples = embed ? [] : readExamples();
  const forcedTheme = embed ? themeFromQuery() : null;

  const status = new StatusLine(
    byId("run-status"),
    byId("wall-time"),
    byId("run-info"),
    byId("run-message"),
  );

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
      say: (text, tone) => status.say(text, tone),
      base: snippet
        ? { slug: snippet.slug, fileName: `${snippet.slug}.py`, title: snippet.title || "Untitled snippet", code: snippet.code }
        : null,
    });
    const startingCode = gallery.startingCode;
    void drafts.pull().then((changed) => {
      if (changed) gallery?.refresh(code.getCode() === startingCode);
    });
  }

  let share: ShareDialog | null = null;
  const code = createEditor({
    container: byId("editor"),
    workerUrl: document.body.dataset.workerUrl || "/static/editor.worker.js",
    code: gallery ? gallery.startingCode : (snippet?.code ?? DEFAULT_CODE),
    theme: forcedTheme ?? currentTheme(),
    onChange: () => gallery?.edited(),
    onRun: () => void run(),
    onSave: embed ? undefined : () => share?.open(),
    onLeave: () => focusAfter(byId("editor")),
    onHelp: () => shortcuts?.open(),
    format: formatCode,
    onFormatError: (message, line) => {
      status.say(`Not formatted: ${message}`, "warning");
      if (line !== null) code.editor.revealLineInCenterIfOutsideViewport(line);
    },
    fontSize: applyFontSize(Number(local.get(KEYS.fontSize) ?? DEFAULT_FONT_SIZE)),
    onFontSize: (size) => {
      local.set(KEYS.fontSize, String(size));
      applyFontSize(size);
    },
  });
  document.getElementById("editor-loading")?.remove();

  // Key bindings (Standard, Vim, Emacs) and the shortcuts panel (F1), where the page has them.
  const keymapStatus = maybeById("keymap-status");
  const keymaps = keymapStatus ? new Keymaps(code.editor, keymapStatus, code.setVimMode) : null;
  const shortcuts = keymaps && !embed ? new ShortcutsDialog(keymaps) : null;
  if (keymaps && Keymaps.saved() !== "standard") void keymaps.use(Keymaps.saved());
  maybeById("shortcuts-button")?.addEventListener("click", () => shortcuts?.open());
  maybeById("format-code")?.addEventListener("click", () => {
    void code.editor.getAction("editor.action.formatDocument")?.run();
  });

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

  const revealLine = (line: number) => {
    code.editor.revealLineInCenter(line);
    code.editor.setPosition({ lineNumber: line, column: 1 });
    code.editor.focus();
  };

  // Result panes, in tab order. New content marks a tab but never switches to it.
  const compiled = new CompiledPane({
    highlight: (line, reveal) => code.linkLine(line, reveal),
    goTo: revealLine,
  });
  code.onCursorLine((line) => compiled.showSourceLine(line));
  const output = new OutputPane(
    revealLine,
    () => tabs.summary().filter((p) => p.id !== "output"),
    (id) => tabs.select(id),
  );
  const panes: Pane[] = [output, compiled, new TimingPane(), new FiguresPane(revealLine)];
  const tabs: Tabs = new Tabs(byId("tabs"), byId("tab-panels"), panes);

  // The editor shows where the exception came from, until the next run.
  const editorMarks: RunView = {
    reset: () => code.clearMarks(),
    idle: () => code.clearMarks(),
    handle: (event) => {
      if (event.type === "error" && typeof event.line === "number") {
        const explanation = event.explanation ? `\n\n${event.explanation}` : "";
        code.markError(event.line, `${event.exc_type}: ${event.message}${explanation}`);
      }
    },
  };


  const librariesButton = maybeById<HTMLButtonElement>("libraries-button");
  const librariesMenu = maybeById("libraries-menu");
  const libraries = librariesButton && librariesMenu ? new LibrariesMenu(librariesButton, librariesMenu) : null;
  // Which run the panes show and whether it has finished: a share keeps it as the output.
  let shownFinished = false;
  const runCodes = new Map<string, string>();
  const views: RunView[] = [
    tabs,
    editorMarks,
    {
      reset: () => (shownFinished = false),
      idle: () => (shownFinished = false),
      handle: (event) => {
        if (event.type === "finished") shownFinished = true;
      },
    },
  ];
  // A saved run is shown by all but the Libraries menu (its versions are not today's) and the
  // screen reader's announcer (nothing is running).
  const savedViews = [...views];
  views.push(new Announcer());
  if (libraries) views.push({ reset: () => {}, handle: (event) => libraries.handle(event) });

  const snippetNotice = maybeById("snippet-notice");
  const devices = new DevicePicker(deviceSelect, {
    onProblem: (problem) => {
      if (!session.busy && !session.id && problem) status.say(problem, "warning");
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

  // A snippet page remembers the run it shows apart from the home page's, so that opening a
  // link never shows another page's run in place of the snippet's own output.
  const runKey = snippet ? `${KEYS.run}:${embed ? "embed" : "s"}:${snippet.slug}` : KEYS.run;
  const session = new RunSession(
    views,
    status,
    (phase) => {
      runButton.disabled = phase !== "idle";
      runButton.classList.toggle("is-busy", phase !== "idle");
      cancelButton.hidden = phase === "idle" || phase === "submitting";
      cancelButton.disabled = phase === "cancelling";
    },
    runKey,
  );

  async function run(): Promise<void> {
    if (session.busy) return;
    const device = devices.value ?? deviceSelect.value ?? "cpu";
    const text = code.getCode();
    // The snippet's own code, unchanged: a snippet saved without output keeps this run as its own.
    await session.start(text, device || "cpu", snippet && text === snippet.code ? snippet.slug : null);
    if (session.id) runCodes.set(session.id, text);
  }

  /** The run the snippet was saved with: kept for "Saved output", and shown as the run when
   *  the page has no run of its own. Only read: nothing runs. */
  async function showSavedRun(id: string, asCurrent: boolean): Promise<void> {
    if (asCurrent) status.say("Loading the saved output…");
    let saved: Awaited<ReturnType<typeof loadRunEvents>>;
    try {
      saved = await loadRunEvents(id);
    } catch (error) {
      if (asCurrent && !session.busy && !session.id) {
        status.say(`Could not load the saved output: ${(error as Error).message}`, "error");
      }
      return;
    }
    output.setSaved(saved.events, readableDate(saved.finishedAt) || "earlier");
    if (!asCurrent || session.busy || session.id) return;
    status.clear();
    for (const view of savedViews) view.reset();
    output.showSaved();
    for (const event of saved.events) {
      for (const view of savedViews) view.handle(event);
      status.handle(event);
    }
  }

  runButton.addEventListener("click", () => void run());
  cancelButton.addEventListener("click", () => void session.cancel());
  const shortcut = maybeById("run-shortcut");
  if (shortcut) shortcut.textContent = runShortcut();
  runButton.title = `Run (${runShortcut().replace(" ↵", "+Enter")})`;

  const shareDialog = maybeById<HTMLDialogElement>("share-dialog");
  const shareButton = maybeById<HTMLButtonElement>("share-button");
  if (shareDialog && !embed) {
    share = new ShareDialog(shareDialog, {
      getCode: code.getCode,
      // The device chosen, a kind or a specific kind (gpu:h200): the run shared keeps its output
      // only when it ran there.
      getDevice: () => devices.value ?? deviceSelect.value ?? snippet?.device ?? "cpu",
      lastRun: () => {
        if (session.id) return { id: session.id, code: runCodes.get(session.id) ?? null, finished: shownFinished };
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
    // Ctrl/Cmd+Enter outside the editor too (the editor has its own keybinding, which stops the
    // event before it reaches the document).
    if (e.key === "Enter") {
      e.preventDefault();
      // Not while the Share dialog is open: the person is writing a title, not asking for a run.
      if (!share?.isOpen) void run();
    } else if ((e.key === "s" || e.key === "S") && share) {
      // Ctrl/Cmd+S shares instead of saving the page.
      e.preventDefault();
      share.open();
    }
  });

  bindHeader((theme) => code.setTheme(theme), forcedTheme);
  const splitter = maybeById("splitter");
  if (splitter) bindSplitter(byId("workspace"), splitter);

  runButton.disabled = false;
  if (snippet && !snippet.run) {
    const keys = isMac() ? "⌘+Enter" : "Ctrl+Enter";
    output.setIdleHint(`This snippet has not been run yet. Run (${keys}) runs it.`);
    output.idle();
  }
  const resumed = session.resume();
  // (A run picked up again may be the saved one itself: the snippet's first run.)
  if (snippet?.run && session.id !== snippet.run) void showSavedRun(snippet.run, !resumed);
  void devices.start();

  // For tests and for poking at the page from the console.
  Object.assign(window, {
    playground: {
      editor: code.editor,
      getCode: code.getCode,
      setCode: code.setCode,
      markers: code.markers,
      run,
      runId: () => session.id,
      openExample: (slug: string) => gallery?.openExample(slug) ?? false,
      compiledNames: () => compiled.names(),
      compiledText: () => compiled.shownText(),
      selectTab: (id: string) => tabs.select(id),
      share: () => share?.open(),
      snippet: snippet?.slug ?? null,
    },
  });
}

main();

/** The output's text follows the editor's size (one px smaller, as by default). */
function applyFontSize(size: number): number {
  const px = clampFontSize(size);
  document.documentElement.style.setProperty("--output-font-size", `${px - 1}px`);
  return px;
}
