// A snippet's embed (/embed/<slug>), in a frame on another site: the workbench with the snippet's
// code, the device picker and Run. No menus, drafts or sharing; the theme is the one the
// embedding page asks for (?theme=dark), else the site's.
import { startRun } from "../api";
import { DevicePicker } from "../devices";
import { byId } from "../dom";
import type { SnippetData } from "../snippet";
import { themeFromQuery } from "../theme";
import { Workbench } from "../workbench";
import { SnippetPage } from "./snippet";

export function embedPage(snippet: SnippetData): void {
  const page = new SnippetPage(snippet, "embed");
  const deviceSelect = byId<HTMLSelectElement>("device-select");
  const bench = new Workbench({
    code: snippet.code,
    runKey: page.runKey,
    startRun: (text) => {
      const device = devices.value ?? deviceSelect.value ?? "cpu";
      return startRun(text, device || "cpu", page.slugFor(text), snippet.runtime);
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
