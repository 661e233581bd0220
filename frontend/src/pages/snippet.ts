// What a shared snippet's page (/s/<slug>) and its embed (/embed/<slug>) add to the workbench.
// Opening a snippet never starts a run: its output is the run it was saved with (kept as "Saved
// output", and shown as the run while the page has none of its own), or none until someone
// presses Run.
import { ApiError, createComparison, type Device } from "../api";
import { maybeById } from "../dom";
import { formatDateTime, language, t } from "../i18n";
import { isMac } from "../platform";
import { driftNotice, loadRunEvents, readableDate, type SnippetData } from "../snippet";
import { KEYS } from "../storage";
import type { Workbench } from "../workbench";

/** When the saved run ended, as a date: "3 May 2025", "2025年5月3日". */
function savedDate(iso: string | null): string {
  if (language === "en" || !iso) return readableDate(iso);
  return formatDateTime(iso, { day: "numeric", month: "short", year: "numeric" });
}

export class SnippetPage {
  /** Where the page says what changed since the snippet was saved (the embed has no room). */
  private readonly notice = maybeById("snippet-notice");

  constructor(readonly data: SnippetData, private readonly where: "s" | "embed") {}

  /** Where the page keeps the id of the run it shows: apart from the home page's, so that
   *  opening a link never shows another page's run in place of the snippet's own output. */
  get runKey(): string {
    return `${KEYS.run}:${this.where}:${this.data.slug}`;
  }

  /** The snippet's slug when `code` is its own code, unchanged: a snippet saved without output
   *  keeps such a run as its own. */
  slugFor(code: string): string | null {
    return code === this.data.code ? this.data.slug : null;
  }

  /** The device list came: says whether the snippet's device is offline or runs another JAX. */
  showDrift(devices: readonly Device[]): void {
    if (!this.notice) return;
    const notice = driftNotice(this.data, devices);
    this.notice.textContent = notice ?? "";
    this.notice.hidden = notice === null;
  }

  /** Starts the workbench, saying so when the snippet was never run, and loads its saved run. */
  start(bench: Workbench): void {
    const saved = this.data.run;
    if (!saved) {
      const keys = isMac() ? "⌘+Enter" : "Ctrl+Enter";
      bench.output.setIdleHint(t("This snippet has not been run yet. Run ({keys}) runs it.", { keys }));
      bench.output.idle();
    }
    this.bindRunOnNewest();
    const resumed = bench.start();
    // (A run picked up again may be the saved one itself: the snippet's first run.)
    if (saved && bench.session.id !== saved) void this.showSavedRun(bench, saved, !resumed);
  }

  /** "Run on the newest": this snippet's code on the default runtime beside its saved run (or,
   *  never run, beside a run on its own runtime), on the comparison's page. */
  private bindRunOnNewest(): void {
    const button = maybeById<HTMLButtonElement>("run-on-newest");
    const error = maybeById("run-on-newest-error");
    if (!button) return;
    button.addEventListener("click", async () => {
      const data = this.data;
      button.disabled = true;
      if (error) error.hidden = true;
      try {
        const comparison = await createComparison({
          code: data.code,
          snippet: data.slug,
          title: data.title,
          sides: [
            data.run ? { run: data.run } : { runtime: data.runtime, device: data.device },
            { runtime: button.dataset.runtime ?? null, device: data.device },
          ],
        });
        location.assign(comparison.url);
      } catch (e) {
        button.disabled = false;
        if (error) {
          error.hidden = false;
          error.textContent = e instanceof ApiError ? e.message : String(e);
        }
      }
    });
  }

  /** The run the snippet was saved with: kept for "Saved output", and shown as the run when
   *  the page has no run of its own. Only read: nothing runs. */
  private async showSavedRun(bench: Workbench, id: string, asCurrent: boolean): Promise<void> {
    if (asCurrent) bench.status.say(t("Loading the saved output…"));
    let saved: Awaited<ReturnType<typeof loadRunEvents>>;
    try {
      saved = await loadRunEvents(id);
    } catch (error) {
      if (asCurrent) bench.notice(t("Could not load the saved output: {error}", { error: (error as Error).message }), "error");
      return;
    }
    bench.output.setSaved(saved.events, savedDate(saved.finishedAt) || t("earlier"));
    if (!asCurrent || bench.session.busy || bench.session.id) return;
    bench.showSaved(saved.events);
  }
}
