// The playground's page (/), and a shared snippet's (/s/<slug>): the workbench (editor, the run's
// Input, result panes, runs) with the page's own parts around it: the examples and drafts (each
// with its Input), key bindings and the shortcuts panel, the Libraries menu, the device picker,
// Share and Download, and a snippet's saved run and input (./snippet.ts). The template is the embed's too (/embed/<slug>), which this bundle
// shows as ./embed.ts does.

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
import "./playground.css";
import "./snippet.css";
import "./embed.css";
import "../styles/simple.css";
import "../compare/compare.css";

import type { Comparison } from "../api";
import { CompareDialog } from "../compare/dialog";
import { comparePage } from "../compare/page";
import { DevicePicker } from "../devices";
import { byId, downloadText, maybeById, pageData } from "../dom";
import { Drafts, Inputs } from "../drafts";
import type { CodeEditor } from "../editor";
import { Gallery, migrateOldDrafts, readExamples } from "../gallery";
import { t } from "../i18n";
import { Keymaps } from "../keymaps";
import { RuntimePicker } from "../runtimes";
import { LibrariesMenu } from "../libraries";
import { overflowMenu } from "../overflow";
import { isMac } from "../platform";
import { startRunWithInput } from "../run";
import { ShareDialog, type ShareSource } from "../share";
import { ShortcutsDialog } from "../shortcuts";
import { readSnippetData, type SnippetData } from "../snippet";
import { snippetInput } from "../stdin";
import { KEYS, local } from "../storage";
import { Workbench } from "../workbench";
import { embedPage } from "./embed";
import { SnippetPage } from "./snippet";

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

/** The widths at which the top bar is a phone's (pages/playground.css says the same). */
const PHONE = "(max-width: 600px)";

/** `snippet`: on a shared snippet's page, the snippet. */
function playgroundPage(snippet: SnippetData | null): void {
  const page = snippet ? new SnippetPage(snippet, "s") : null;
  const deviceSelect = byId<HTMLSelectElement>("device-select");
  const examples = readExamples();

  // The person's drafts (their own code, each example and snippet they edited) live in
  // localStorage, and on the server too when they are signed in.
  const examplesButton = maybeById<HTMLButtonElement>("examples-button");
  let gallery: Gallery | null = null;
  if (examplesButton) {
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
        undoBar: byId("undo-bar"),
      },
      defaultCode: DEFAULT_CODE,
      say: (text, tone) => bench.status.say(text, tone),
      base: snippet
        ? { slug: snippet.slug, fileName: `${snippet.slug}.py`, title: snippet.title || t("Untitled snippet"), code: snippet.code }
        : null,
    });
    const startingCode = gallery.startingCode;
    void drafts.pull().then((changed) => {
      if (changed) gallery?.refresh(bench.code.getCode() === startingCode);
    });
  }

  const runtimeSelect = maybeById<HTMLSelectElement>("runtime-select");
  const runtimes = runtimeSelect ? new RuntimePicker(runtimeSelect, snippet?.runtime ?? null) : null;
  const librariesButton = maybeById<HTMLButtonElement>("libraries-button");
  const librariesMenu = maybeById("libraries-menu");
  const libraries = librariesButton && librariesMenu ? new LibrariesMenu(librariesButton, librariesMenu) : null;
  // The Input of the document open (its draft's key, as the gallery keeps it), or on a snippet's
  // page the snippet's input; kept in this browser beside the draft.
  const inputs = new Inputs();
  const savedInput = snippet ? snippetInput() : "";
  const openedAt = local.get(KEYS.current);
  const documentKey = (): string => {
    const current = local.get(KEYS.current);
    // A snippet's page holds the snippet until another document is opened there.
    if (snippet && current === openedAt) return `snippet:${snippet.slug}`;
    return current ?? "own";
  };
  let inputKey = documentKey();
  const inputBase = (key: string): string => (snippet && key === `snippet:${snippet.slug}` ? savedInput : "");
  // Opening another document replaces the editor's code, then the gallery notes which is open.
  const followDocument = () => queueMicrotask(() => {
    const key = documentKey();
    if (key === inputKey) return;
    inputKey = key;
    bench.input?.load(inputs.get(key) ?? inputBase(key));
  });

  // Which run the panes show and whether it has finished: a share keeps it as the output.
  let shownFinished = false;
  const runCodes = new Map<string, { code: string; stdin: string }>();
  let share: ShareDialog | null = null;
  let shortcuts: ShortcutsDialog | null = null;
  let compare: CompareDialog | null = null;

  const bench = new Workbench({
    code: gallery ? gallery.startingCode : (snippet?.code ?? DEFAULT_CODE),
    runKey: page?.runKey ?? KEYS.run,
    runSocket: true,
    profiling: true,
    startRun: async (text, options, stdin = "") => {
      const device = devices.value ?? deviceSelect.value ?? "cpu";
      const run = await startRunWithInput(text, device || "cpu", page?.slugFor(text) ?? null,
        runtimes?.value ?? snippet?.runtime, options, stdin);
      runCodes.set(run.id, { code: text, stdin });
      return run;
    },
    input: {
      text: inputs.get(inputKey) ?? inputBase(inputKey),
      onChange: (text) => inputs.save(inputKey, text, inputBase(inputKey)),
    },
    onChange: () => {
      gallery?.edited();
      followDocument();
    },
    onSave: () => share?.open(),
    onHelp: () => shortcuts?.open(),
    // Not while the Share dialog is open: the person is writing a title, not asking for a run.
    runsFromPage: () => !share?.isOpen && !compare?.isOpen,
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

  shortcuts = bindKeymaps(code);

  gallery?.attach({
    getCode: code.getCode,
    setCode: (text) => {
      code.setCode(text);
      code.editor.setPosition({ lineNumber: 1, column: 1 });
      code.editor.revealLine(1);
      code.editor.focus();
    },
  });
  followDocument(); // the gallery has said which document is open (a link's #example=...)

  document.getElementById("download-code")?.addEventListener("click", () => {
    downloadText(code.getCode(), byId("file-name").textContent || "snippet.py");
  });

  const devices = new DevicePicker(deviceSelect, {
    onProblem: (problem) => {
      if (problem) bench.notice(problem, "warning");
    },
    onChoice: (device) => libraries?.fromDevice(device),
    preferred: snippet?.device ?? null,
    withJax: runtimes === null,
    onList: (list) => {
      page?.showDrift(list);
      void runtimes?.refresh(devices.value ?? deviceSelect.value ?? "cpu");
    },
  });

  share = bindShare({
    getCode: code.getCode,
    getInput: () => bench.input?.value ?? "",
    // The device chosen, a kind or a specific kind (gpu:h200): the run shared keeps its output
    // only when it ran there.
    getDevice: () => devices.value ?? deviceSelect.value ?? snippet?.device ?? "cpu",
    getRuntime: () => runtimes?.value ?? snippet?.runtime ?? null,
    lastRun: () => {
      const id = bench.session.id;
      if (id) {
        const ran = runCodes.get(id);
        return { id, code: ran?.code ?? null, stdin: ran?.stdin ?? null, finished: shownFinished };
      }
      if (snippet?.run) return { id: snippet.run, code: snippet.code, stdin: savedInput, finished: shownFinished };
      return null;
    },
    original: snippet ? { slug: snippet.slug, title: snippet.title, code: snippet.code, stdin: savedInput } : null,
    // The edits are the fork's now: this page's draft of the original goes, so the original's
    // page shows its own code again (its link is not the fork's).
    onForked: (forked) => {
      gallery?.forked(forked);
      // Its input went with it: the original's page shows the original's again.
      if (snippet && inputKey === `snippet:${snippet.slug}`) inputs.save(inputKey, savedInput, savedInput);
    },
  });

  const compareDialog = maybeById<HTMLDialogElement>("compare-dialog");
  compare = compareDialog
    ? new CompareDialog(compareDialog, {
        getCode: code.getCode,
        getDevice: () => devices.value ?? deviceSelect.value ?? snippet?.device ?? "cpu",
        getRuntime: () => runtimes?.value ?? snippet?.runtime ?? null,
        deviceSelect,
        getInput: () => bench.input?.value ?? "",
      })
    : null;
  maybeById("compare-button")?.addEventListener("click", () => void compare?.open());
  // On a phone the JAX version, Compare, the language, the theme and, signed out, Sign in and Sign
  // up live in the bar's More menu: the device (whose name needs the room), Profile, Run, Share
  // and a signed-in account keep the one row.
  const more = maybeById<HTMLButtonElement>("more-button");
  if (more) {
    const moving = [
      document.querySelector<HTMLElement>(".topbar-playground .runtime-picker"),
      maybeById("compare-button"),
      document.querySelector<HTMLElement>(".topbar-playground .language-form"),
      maybeById("theme-toggle"),
      document.querySelector<HTMLElement>(".topbar-playground .account-links"),
    ];
    overflowMenu(more, byId("more-menu"), moving.filter((x): x is HTMLElement => x !== null), PHONE);
  }

  if (page) page.start(bench);
  else bench.start();
  void devices.start();

  // For tests and for poking at the page from the console.
  Object.assign(window, {
    playground: {
      ...bench.hooks(),
      openExample: (slug: string) => gallery?.openExample(slug) ?? false,
      compare: () => compare?.open(),
      share: () => share?.open(),
      snippet: snippet?.slug ?? null,
    },
  });
}

/** Key bindings (Standard, Vim, Emacs) and the shortcuts panel (F1), where the page has them. */
function bindKeymaps(code: CodeEditor): ShortcutsDialog | null {
  const keymapStatus = maybeById("keymap-status");
  const keymaps = keymapStatus ? new Keymaps(code.editor, keymapStatus, code.setVimMode) : null;
  const shortcuts = keymaps ? new ShortcutsDialog(keymaps) : null;
  if (keymaps && Keymaps.saved() !== "standard") void keymaps.use(Keymaps.saved());
  maybeById("shortcuts-button")?.addEventListener("click", () => shortcuts?.open());
  document.addEventListener("keydown", (e) => {
    if (e.key === "F1" && shortcuts && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      shortcuts.open();
    }
  });
  return shortcuts;
}

/** Share: the dialog, its button and Ctrl/Cmd+S, where the page has them. */
function bindShare(source: ShareSource): ShareDialog | null {
  const dialog = maybeById<HTMLDialogElement>("share-dialog");
  if (!dialog) return null;
  const share = new ShareDialog(dialog, source);
  const button = maybeById<HTMLButtonElement>("share-button");
  if (button) {
    button.title = t("Share a link to this code ({keys})", { keys: isMac() ? "⌘S" : "Ctrl+S" });
    button.setAttribute("aria-keyshortcuts", isMac() ? "Meta+S" : "Control+S");
    button.addEventListener("click", () => share.open());
  }
  document.addEventListener("keydown", (e) => {
    if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
    if (e.key === "s" || e.key === "S") {
      // Ctrl/Cmd+S shares instead of saving the page.
      e.preventDefault();
      share.open();
    }
  });
  return share;
}

const snippet = readSnippetData();
const comparison = document.body.dataset.page === "compare" ? pageData<Comparison>("comparison-data") : null;
if (comparison) comparePage(comparison);
else if (document.body.dataset.embed === "true" && snippet) embedPage(snippet);
else playgroundPage(snippet);
