// The playground page: wires the editor, the device picker, the run session and the result
// panes together. Each of those lives in its own module; this one only connects them.
import "./style.css";

import { DevicePicker } from "./devices";
import { createEditor } from "./editor";
import { Gallery, readExamples } from "./gallery";
import { LibrariesMenu } from "./libraries";
import { CompiledPane } from "./panes/compiled";
import { FiguresPane } from "./panes/figures";
import { OutputPane } from "./panes/output";
import { Tabs, type Pane } from "./panes/pane";
import { TimingPane } from "./panes/timing";
import { runShortcut } from "./platform";
import { RunSession, type RunView } from "./run";
import { StatusLine } from "./status";
import { KEYS, local } from "./storage";
import { bindSplitter } from "./split";
import { bindThemeToggle, currentTheme } from "./theme";

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

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

function main(): void {
  const runButton = byId<HTMLButtonElement>("run-button");
  const cancelButton = byId<HTMLButtonElement>("cancel-button");
  const deviceSelect = byId<HTMLSelectElement>("device-select");

  let gallery: Gallery | null = null;
  const code = createEditor({
    container: byId("editor"),
    workerUrl: document.body.dataset.workerUrl || "/static/editor.worker.js",
    code: local.get(KEYS.code) ?? DEFAULT_CODE,
    theme: currentTheme(),
    onChange: (text) => {
      local.set(KEYS.code, text);
      gallery?.edited();
    },
    onRun: () => void run(),
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
  const panes: Pane[] = [
    new OutputPane(
      revealLine,
      () => tabs.summary().filter((p) => p.id !== "output"),
      (id) => tabs.select(id),
    ),
    compiled,
    new TimingPane(),
    new FiguresPane(),
  ];
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

  const status = new StatusLine(
    byId("run-status"),
    byId("wall-time"),
    byId("run-info"),
    byId("run-message"),
  );

  const libraries = new LibrariesMenu(byId("libraries-button"), byId("libraries-menu"));
  const librariesView: RunView = { reset: () => {}, handle: (event) => libraries.handle(event) };

  const devices = new DevicePicker(
    deviceSelect,
    (problem) => {
      if (!session.busy && !session.id && problem) status.say(problem, "warning");
    },
    (device) => libraries.fromDevice(device),
  );

  const session = new RunSession([tabs, editorMarks, librariesView], status, (phase) => {
    runButton.disabled = phase !== "idle";
    runButton.classList.toggle("is-busy", phase !== "idle");
    cancelButton.hidden = phase === "idle" || phase === "submitting";
    cancelButton.disabled = phase === "cancelling";
  });

  async function run(): Promise<void> {
    if (session.busy) return;
    const device = devices.value ?? deviceSelect.value ?? "cpu";
    await session.start(code.getCode(), device || "cpu");
  }

  runButton.addEventListener("click", () => void run());
  gallery = new Gallery(
    readExamples(),
    {
      getCode: code.getCode,
      setCode: (text) => {
        code.setCode(text);
        code.editor.setPosition({ lineNumber: 1, column: 1 });
        code.editor.revealLine(1);
        code.editor.focus();
      },
    },
    {
      button: byId("examples-button"),
      menu: byId("examples-menu"),
      fileName: byId("file-name"),
      reset: byId("reset-code"),
      restore: byId("restore-code"),
    },
    DEFAULT_CODE,
    (text, tone) => status.say(text, tone),
  );
  cancelButton.addEventListener("click", () => void session.cancel());
  byId("run-shortcut").textContent = runShortcut();
  runButton.title = `Run (${runShortcut().replace(" ↵", "+Enter")})`;

  // Ctrl/Cmd+Enter outside the editor too (the editor has its own keybinding, which stops the
  // event before it reaches the document).
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey) {
      e.preventDefault();
      void run();
    }
  });

  bindThemeToggle(byId<HTMLButtonElement>("theme-toggle"), (theme) => code.setTheme(theme));
  bindSplitter(byId("workspace"), byId("splitter"));

  runButton.disabled = false;
  session.resume();
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
      openExample: (slug: string) => gallery?.open(slug) ?? false,
      compiledNames: () => compiled.names(),
      compiledText: () => compiled.shownText(),
      selectTab: (id: string) => tabs.select(id),
    },
  });
}

main();
