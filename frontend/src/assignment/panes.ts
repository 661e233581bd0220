// The assignment page's tabs besides the submissions: a part of the page the server rendered (the
// brief, the settings form), and the run's results.
import type { RunEvent } from "../events";
import { t } from "../i18n";
import type { Pane } from "../panes/pane";
import type { RunView } from "../run";

/** A pane that is a part of the page the server rendered (the brief, the settings form). */
export class StaticPane implements Pane {
  onChange?: (count: number | null) => void;
  constructor(readonly id: string, readonly title: string, readonly element: HTMLElement) {}
  reset(): void {}
  handle(): void {}
}

/** The results of a run: the workbench's Output, Compiled, Timing and Figures, under a tab bar of
 *  their own, as one tab of the page. The run session shows each run to the workbench's panes
 *  (not through the page's tabs, whose other panes keep what they show from run to run); this
 *  tab only raises its alert on an error. */
export class ResultsPane implements Pane, RunView {
  readonly id = "results";
  readonly title = t("Results");
  onChange?: (count: number | null) => void;
  onAlert?: (alert: string | null) => void;

  constructor(readonly element: HTMLElement) {}

  reset(): void {
    this.onAlert?.(null);
  }

  idle(): void {
    this.onAlert?.(null);
  }

  handle(event: RunEvent): void {
    if (event.type === "error") this.onAlert?.("error");
  }
}
