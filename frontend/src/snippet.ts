// A shared snippet's page (/s/<slug>) and its embed (/embed/<slug>): the data the server renders
// into #snippet-data, and the run it was saved with, read page by page. Opening a snippet never
// starts a run: its output is the saved one, or none until someone presses Run.
import { getRun, type Device } from "./api";
import { findDevice } from "./devices";
import { parseEvent, type RunEvent } from "./events";
import { formatDateTime, language, t } from "./i18n";

export interface SnippetData {
  slug: string;
  code: string;
  title: string;
  device: string;
  /** The runtime it is pinned to (GET /api/runtimes): its runs use that JAX. */
  runtime: string | null;
  /** The JAX its runtime pins: what a new run uses. */
  runtime_jax: string | null;
  jax_version: string | null;
  jaxlib_version: string | null;
  /** The saved run's id, or null: not run yet. */
  run: string | null;
  /** The slug of the snippet this one was forked from. */
  parent: string | null;
  created_at: string;
}

/** The snippet the server rendered into the page, or null on any other page. */
export function readSnippetData(): SnippetData | null {
  const script = document.getElementById("snippet-data");
  if (!script) return null;
  try {
    const data = JSON.parse(script.textContent ?? "null") as Partial<SnippetData> | null;
    if (!data || typeof data.slug !== "string" || typeof data.code !== "string") return null;
    return {
      slug: data.slug,
      code: data.code,
      title: typeof data.title === "string" ? data.title : "",
      device: typeof data.device === "string" ? data.device : "cpu",
      runtime: typeof data.runtime === "string" && data.runtime ? data.runtime : null,
      runtime_jax: typeof data.runtime_jax === "string" && data.runtime_jax ? data.runtime_jax : null,
      jax_version: typeof data.jax_version === "string" && data.jax_version ? data.jax_version : null,
      jaxlib_version: typeof data.jaxlib_version === "string" && data.jaxlib_version ? data.jaxlib_version : null,
      run: typeof data.run === "string" && data.run ? data.run : null,
      parent: typeof data.parent === "string" && data.parent ? data.parent : null,
      created_at: typeof data.created_at === "string" ? data.created_at : "",
    };
  } catch {
    return null;
  }
}

/**
 * Every event of a finished run, in seq order, from GET /api/runs/<id> (all pages). A link opened
 * moments after it was shared may find the run's last events not stored yet (they are recorded
 * a moment after the page that shared it saw them): it asks again for a few seconds until the
 * events run 1, 2, ... to the end without a gap.
 */
export async function loadRunEvents(
  id: string,
  { patienceMs = 8000, everyMs = 400 }: { patienceMs?: number; everyMs?: number } = {},
): Promise<{ events: RunEvent[]; finishedAt: string | null }> {
  const giveUpAt = Date.now() + patienceMs;
  for (;;) {
    const saved = await readRunEvents(id);
    if (recordedToTheEnd(saved.events) || Date.now() + everyMs > giveUpAt) return saved;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

function recordedToTheEnd(events: RunEvent[]): boolean {
  return events.length > 0 && events[events.length - 1].type === "finished" && events.every((e, i) => e.seq === i + 1);
}

async function readRunEvents(id: string): Promise<{ events: RunEvent[]; finishedAt: string | null }> {
  const bySeq = new Map<number, RunEvent>();
  let after = 0;
  let record = await getRun(id);
  for (;;) {
    for (const raw of record.events ?? []) {
      const event = parseEvent(raw);
      if (event) bySeq.set(event.seq, event);
    }
    const next = record.events_next;
    // null on the last page; a next page that does not move on would never end.
    if (typeof next !== "number" || next <= after) break;
    after = next;
    record = await getRun(id, { after });
  }
  const finishedAt = record.finished_at ?? record.created_at ?? null;
  return { events: [...bySeq.values()].sort((a, b) => a.seq - b.seq), finishedAt };
}

/** A date as people read it: "3 May 2025", "2025年5月3日". */
export function readableDate(iso: string | null): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const options: Intl.DateTimeFormatOptions = { day: "numeric", month: "short", year: "numeric" };
  return language === "en" ? date.toLocaleDateString("en-GB", options) : formatDateTime(date, options);
}

/**
 * What has changed since the snippet was saved, in plain words, or null when nothing has: its
 * device kind is offline, or it runs another JAX version now.
 */
export function driftNotice(snippet: SnippetData, devices: readonly Device[]): string | null {
  const kind = snippet.device.toUpperCase();
  const device = findDevice(devices, snippet.device);
  if (!device || !device.online) {
    const other = devices.find((d) => d.online);
    return other
      ? t("No {kind} executor is online right now: Run would use {other} instead.", { kind, other: other.kind.toUpperCase() })
      : t("No {kind} executor is online right now, so it cannot be run at the moment.", { kind });
  }
  const saved = snippet.jax_version;
  // A run goes to the snippet's runtime; what it pins may not be what the saved run had (a
  // snippet saved on a node image of another JAX before there were runtimes).
  if (saved && snippet.runtime && snippet.runtime_jax && snippet.runtime_jax !== saved) {
    return t("Saved with JAX {saved}; its runtime {runtime} runs JAX {jax}, so a new run may differ.", {
      saved,
      runtime: snippet.runtime,
      jax: snippet.runtime_jax,
    });
  }
  if (saved && device.jax_version && device.jax_version !== saved) {
    if (snippet.runtime) {
      return t("Pinned to runtime {runtime}: Run uses JAX {saved}, as when it was saved ({kind}'s default is JAX {jax}).", {
        runtime: snippet.runtime,
        saved,
        kind,
        jax: device.jax_version,
      });
    }
    return t("Saved with JAX {saved}; {kind} runs JAX {jax} today, so a new run may differ.", { saved, kind, jax: device.jax_version });
  }
  return null;
}
