// A snippet's embed (/embed/<slug>), in a frame on another site: the workbench with the snippet's
// code, the device picker and Run. No menus, drafts or sharing; the theme is the one the
// embedding page asks for (?theme=dark), else the site's. A snippet saved with an input reads it
// on every run, as its link's page does (no Input box: an embed stays small).
import { DevicePicker } from "../devices";
import { byId } from "../dom";
import { startRunWithInput } from "../run";
import type { SnippetData } from "../snippet";
import { snippetInput } from "../stdin";
import { themeFromQuery } from "../theme";
import { Workbench } from "../workbench";
import { SnippetPage } from "./snippet";

export function embedPage(snippet: SnippetData): void {
  const page = new SnippetPage(snippet, "embed");
  const deviceSelect = byId<HTMLSelectElement>("device-select");
  const stdin = snippetInput();
  const bench = new Workbench({
    code: snippet.code,
    runKey: page.runKey,
    profiling: true,
    startRun: (text, options) => {
      const device = devices.value ?? deviceSelect.value ?? "cpu";
      return startRunWithInput(text, device || "cpu", page.slugFor(text), snippet.runtime, options, stdin);
    },
    forcedTheme: themeFromQuery(),
    // F1 does nothing here (no shortcuts panel, and no command palette either).
    onHelp: () => {},
  });
  const devices = new DevicePicker(deviceSelect, {
    onProblem: (problem) => {
      if (problem) bench.notice(problem, "warning");
    },
    preferred: snippet.device,
    onList: (list) => page.showDrift(list),
  });
  page.start(bench);
  void devices.start();

  // For tests and for poking at the page from the console.
  Object.assign(window, {
    playground: { ...bench.hooks(), openExample: () => false, share: () => {}, snippet: snippet.slug },
  });
}
