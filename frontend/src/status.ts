// The run's status line: a coloured badge (#run-status), the wall time (#wall-time), where it ran
// (#run-info) and one message (#run-message) for queue position, connection trouble, the
// server's answer to a refused run and how a run ended.
import { serverNow } from "./api";
import type { ConnectionState, FinishedEvent, RunEvent, StartedEvent, WaitingEvent } from "./events";
import { finishedMessageText } from "./explanations";
import { t } from "./i18n";

type Tone = "muted" | "info" | "warning" | "error";
/** Who set the message, so that each clears only its own: a reconnect notice, a compile in
 *  progress, anything else. */
type MessageSource = "connection" | "compiling" | "other";

const ENDINGS: Record<string, string> = {
  timed_out: t("The run hit its time limit and was stopped."),
  cancelled: t("The run was cancelled."),
  limit_exceeded: t("The run exceeded a resource limit (memory or output) and was stopped."),
  lost: t("The executor running this snippet stopped responding; the run is lost."),
};

/** The statuses' words; a status the page does not know is shown by its name. */
const WORDS: Record<string, string> = {
  queued: t("queued"),
  starting: t("starting"),
  running: t("running"),
  succeeded: t("succeeded"),
  failed: t("failed"),
  cancelled: t("cancelled"),
  timed_out: t("timed out"),
  lost: t("lost"),
};

/** A run stopped at a limit, by the limit its message names (the runner's words, in English). */
const LIMITS: Record<string, string> = {
  memory: t("stopped: memory limit"),
  "CPU time": t("stopped: CPU limit"),
  output: t("stopped: output limit"),
  process: t("stopped: process limit"),
  event: t("stopped: event limit"),
};

/** The badge's words: what a person reads, not the API's names (those stay in data-status). */
export function statusWord(status: string, message = ""): string {
  if (status === "limit_exceeded") {
    const which = /\b(memory|CPU time|output|process|event) limit/.exec(message)?.[1];
    return (which && LIMITS[which]) || t("stopped: limit");
  }
  return Object.prototype.hasOwnProperty.call(WORDS, status) ? WORDS[status] : status;
}

/** How often the running clock moves. */
const CLOCK_MS = 100;

export class StatusLine {
  private messageSource: MessageSource | null = null;
  private started: StartedEvent | null = null;
  // The running clock counts in the server's time (events' ts, and the server's clock as the
  // page last heard it), so a replay after a reload shows how long the run has really been
  // going, whatever the browser's own clock says.
  private clock: number | null = null;
  private startedTs = 0;
  private lastServerTs = 0;
  private lastLocal = 0;

  constructor(
    private readonly badge: HTMLElement,
    private readonly wallTime: HTMLElement,
    private readonly info: HTMLElement,
    private readonly message: HTMLElement,
  ) {}

  /** Nothing to show: no run yet, or a run that is gone. */
  clear(): void {
    this.stopClock();
    this.setStatus(null);
    this.wallTime.textContent = "";
    this.info.textContent = "";
    this.started = null;
    this.setMessage(null);
  }

  starting(): void {
    this.clear();
    this.setMessage(t("Submitting…"), "muted");
  }

  refused(error: string): void {
    this.clear();
    this.setMessage(error, "error");
  }

  following(status: string): void {
    this.setStatus(status);
    this.setMessage(null);
  }

  say(text: string, tone: Tone = "muted"): void {
    this.setMessage(text, tone);
  }

  handle(event: RunEvent): void {
    if (typeof event.ts === "number" && this.clock !== null) {
      this.lastServerTs = Math.max(this.lastServerTs, event.ts);
      this.lastLocal = performance.now();
      this.showClock(); // a replay's events move it at once, not on the next tick
    }
    if (event.type !== "queued" && event.type !== "waiting" && event.type !== "finished" &&
        this.badge.dataset.status === "queued") {
      this.setStatus("running");
    }
    switch (event.type) {
      case "queued":
        this.setStatus("queued");
        this.setMessage(
          typeof event.position === "number" && event.position > 0
            ? t("Waiting for an executor: position {position} in the queue.", { position: event.position })
            : t("Waiting for an executor…"),
          "muted",
        );
        break;
      case "waiting":
        // Taken by a node, in line there for a chip: still queued (its own time starts later).
        this.setStatus("queued");
        this.setMessage(waitingText(event), "muted");
        break;
      case "started":
        this.started = event;
        this.setStatus("running");
        this.info.textContent = describeWorker(event);
        this.info.title = this.info.textContent;
        if (this.messageSource !== "connection") this.setMessage(null);
        if (typeof event.ts === "number") this.startClock(event.ts);
        break;
      case "compiling":
        if (event.done) {
          if (this.messageSource === "compiling") this.setMessage(null);
        } else if (this.messageSource !== "connection") {
          const what = event.signature || event.name || t("a function");
          this.setMessage(t("XLA is compiling {what}…", { what }), "info", "compiling");
        }
        break;
      case "compiled":
        if (this.messageSource === "compiling") this.setMessage(null);
        break;
      case "finished":
        this.finish(event);
        break;
    }
  }

  connection(state: ConnectionState): void {
    if (state === "reconnecting") {
      this.setMessage(t("Connection lost: reconnecting…"), "warning", "connection");
    } else if (this.messageSource === "connection") {
      this.setMessage(null);
    }
  }

  private startClock(startedTs: number): void {
    this.stopClock();
    this.startedTs = startedTs;
    this.lastServerTs = startedTs;
    this.lastLocal = performance.now();
    this.clock = window.setInterval(() => this.showClock(), CLOCK_MS);
    this.showClock();
  }

  private showClock(): void {
    // The server's clock, when the page knows it, says how long the run has been going even
    // after a reload during a quiet stretch; without it, count from the latest event.
    const now = serverNow();
    const sinceEvents = (this.lastServerTs - this.startedTs) * 1000 + (performance.now() - this.lastLocal);
    const ms = Math.max(0, now !== null ? Math.max((now - this.startedTs) * 1000, sinceEvents) : sinceEvents);
    // Tenths while it runs: a clock, not a measurement (that comes with "finished").
    this.wallTime.textContent = ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : formatMs(ms);
    this.wallTime.title = t("Running for this long so far");
  }

  private stopClock(): void {
    if (this.clock !== null) window.clearInterval(this.clock);
    this.clock = null;
  }

  private finish(event: FinishedEvent): void {
    this.stopClock();
    this.setStatus(event.status, event.message ?? "");
    this.wallTime.textContent = typeof event.wall_ms === "number" ? formatMs(event.wall_ms) : "";
    this.wallTime.title = t("Wall-clock time of the run");
    const extra: string[] = [];
    if (typeof event.cpu_ms === "number") extra.push(t("CPU {time}", { time: formatMs(event.cpu_ms) }));
    if (typeof event.peak_memory_kb === "number" && event.peak_memory_kb > 0) {
      extra.push(t("peak {memory}", { memory: formatKb(event.peak_memory_kb) }));
    }
    if (typeof event.device_peak_bytes === "number" && event.device_peak_bytes > 0) {
      extra.push(t("device memory peak {memory}", { memory: formatKb(event.device_peak_bytes / 1024) }));
    }
    const where = this.started ? describeWorker(this.started) : "";
    this.info.textContent = [where, ...extra].filter(Boolean).join(" · ");
    this.info.title = this.info.textContent;
    let text = finishedMessageText(event as unknown as Record<string, unknown>) || ENDINGS[event.status] || null;
    // What to do about it is under the output (panes/output.ts), where the run's end is shown.
    if (event.status === "timed_out" && text) {
      text = t("{message}: the Output tab says what to try.", { message: text.replace(/[.。]$/, "") });
    }
    const tone: Tone = event.status === "succeeded" || event.status === "failed" ? "muted" : "warning";
    this.setMessage(text, tone);
  }

  private setStatus(status: string | null, message = ""): void {
    this.badge.hidden = status === null;
    this.badge.textContent = status ? statusWord(status, message) : "";
    this.badge.dataset.status = status ?? "";
    this.badge.title = status ? t("Run status: {status}", { status: statusWord(status, message) }) : "";
  }

  private setMessage(
    text: string | null,
    tone: Tone = "muted",
    source: MessageSource = "other",
  ): void {
    this.message.textContent = text ?? "";
    this.message.dataset.tone = text ? tone : "";
    this.messageSource = text ? source : null;
  }
}

function describeWorker(event: StartedEvent): string {
  const parts: string[] = [];
  if (event.worker) parts.push(event.worker);
  const count = event.device_count ?? 0;
  const kind = event.device_kind || event.platform || "";
  if (count > 0 && kind) parts.push(`${count} × ${kind}`);
  else if (kind) parts.push(kind);
  if (event.jax_version) parts.push(`JAX ${event.jax_version}`);
  if (event.chips) parts.push(t("chip {chips}", { chips: event.chips }));
  // The wait for the chip, apart from the run's own time (the wall time beside it).
  if (typeof event.waited_ms === "number" && event.waited_ms >= 100) {
    parts.push(t("waited {time} for the chip", { time: formatMs(event.waited_ms) }));
  }
  return parts.join(" · ");
}

/** "Waiting for a TPU chip: 2 ahead, about 20 s" (the node's kind names the device). */
export function waitingText(event: WaitingEvent): string {
  const device = (event.device || "").split(":")[0] === "tpu" ? t("a TPU chip") : t("a chip");
  const ahead = event.ahead ?? 0;
  const about = typeof event.eta_s === "number" && event.eta_s > 0 ? formatMs(event.eta_s * 1000) : null;
  if (about) return t("Waiting for {device}: {ahead} ahead, about {time}", { device, ahead, time: about });
  return t("Waiting for {device}: {ahead} ahead", { device, ahead });
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function formatKb(kb: number): string {
  if (kb < 1024) return `${kb} KiB`;
  if (kb < 1024 * 1024) return `${(kb / 1024).toFixed(0)} MiB`;
  return `${(kb / 1024 / 1024).toFixed(1)} GiB`;
}
