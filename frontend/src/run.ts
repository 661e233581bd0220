// One run at a time: start it, follow its events, cancel it, and pick it up again after a
// reload (the run id lives in sessionStorage, so a reload replays the run from seq 0).
import { ApiError, cancelRun, getRun, launcher, request, startRun, type CreatedRun, type RunOptions } from "./api";
import { isTerminal, RunStream, type RunEvent } from "./events";
import { t } from "./i18n";
import type { StatusLine } from "./status";
import { KEYS, session } from "./storage";

export interface RunView {
  /** A run is about to be shown. */
  reset(): void;
  handle(event: RunEvent): void;
  /** No run to show any more. */
  idle?(): void;
}

export type RunPhase = "idle" | "submitting" | "active" | "cancelling";

// The largest start a run socket is sent (daphne takes messages of at most 1 MiB); a larger one
// (an input of control characters, which JSON writes six bytes each) is posted.
const SOCKET_START_MAX_BYTES = 768 * 1024;

/** Starts a run as api.ts startRun does, reading `stdin` as its standard input ("": none). */
export async function startRunWithInput(
  code: string,
  device: string,
  snippet: string | null,
  runtime: string | null | undefined,
  options: RunOptions | null | undefined,
  stdin: string,
): Promise<CreatedRun> {
  if (!stdin) return startRun(code, device, snippet, runtime, options);
  const body = {
    code,
    device,
    stdin,
    ...(snippet ? { snippet } : {}),
    ...(runtime ? { runtime } : {}),
    ...(options && Object.keys(options).length ? { options } : {}),
  };
  const size = new TextEncoder().encode(JSON.stringify(body)).length;
  const run = size <= SOCKET_START_MAX_BYTES ? await launcher.start(body) : null;
  return run ?? request<CreatedRun>("POST", "/api/runs", body);
}

export class RunSession {
  private stream: RunStream | null = null;
  private phase: RunPhase = "idle";
  private runId: string | null = null;

  constructor(
    private readonly views: readonly RunView[],
    private readonly status: StatusLine,
    private readonly onPhase: (phase: RunPhase) => void,
    /** Where this tab keeps the id of the run it watches (a snippet page keeps its own). */
    private readonly runKey: string = KEYS.run,
  ) {}

  get busy(): boolean {
    return this.phase !== "idle";
  }

  get id(): string | null {
    return this.runId;
  }

  /** `snippet`: the slug of the snippet whose unchanged code this is. */
  async start(code: string, device: string, snippet?: string | null): Promise<void> {
    return this.startWith(() => startRun(code, device, snippet));
  }

  /** Starts a run made by `create` (another endpoint than POST /api/runs: an assignment's run
   *  or submission) and follows it as any other. */
  async startWith(create: () => Promise<CreatedRun>): Promise<void> {
    if (this.busy) return;
    this.stream?.stop();
    this.stream = null;
    this.setPhase("submitting");
    this.status.starting();
    try {
      const run = await create();
      this.runId = run.id;
      session.set(this.runKey, run.id);
      this.follow(run.id, run.ws, run.launched, run.feed);
      this.status.following(run.status || "queued");
    } catch (error) {
      // Nothing runs: the previous run's output would now be misleading next to the message.
      this.forget();
      this.status.refused(error instanceof ApiError ? error.message : String(error));
      this.setPhase("idle");
    }
  }

  /** After a reload: show the run this tab was watching, from its first event. */
  resume(): boolean {
    const id = session.get(this.runKey);
    if (!id) return false;
    this.runId = id;
    this.status.say(t("Loading the last run…"));
    this.follow(id);
    return true;
  }

  async cancel(): Promise<void> {
    if (this.phase !== "active" || !this.runId) return;
    this.setPhase("cancelling");
    try {
      await cancelRun(this.runId);
      // The "finished" event (status cancelled) arrives on the socket and ends the run.
    } catch (error) {
      if (this.stream && !this.stream.done) this.setPhase("active");
      // 409: it finished on its own meanwhile; its "finished" event says how.
      if (!(error instanceof ApiError && error.status === 409)) {
        this.status.say(t("Could not cancel: {error}", { error: (error as Error).message }), "error");
      }
    }
  }

  /** No run to show. */
  private forget(): void {
    this.stream?.stop();
    this.stream = null;
    this.runId = null;
    session.set(this.runKey, null);
    for (const view of this.views) view.idle?.();
  }

  private follow(id: string, path?: string, launched?: CreatedRun["launched"], feed?: CreatedRun["feed"]): void {
    this.stream?.stop();
    for (const view of this.views) view.reset();
    this.setPhase("active");
    const stream: RunStream = new RunStream(
      id,
      {
        onEvent: (event) => {
          for (const view of this.views) view.handle(event);
          this.status.handle(event);
          if (event.type === "finished") this.setPhase("idle");
        },
        onConnection: (state) => this.status.connection(state),
        onUnknownRun: () => void this.fromRecord(stream),
      },
      { path, launched, feed },
    );
    this.stream = stream;
  }

  /** The socket does not know the run (its live log expired): fall back to the stored run, page
   *  by page, each page's events shown as it comes. */
  private async fromRecord(stream: RunStream): Promise<void> {
    let after = 0;
    try {
      let record = await getRun(stream.runId);
      for (;;) {
        if (stream !== this.stream) return;
        stream.deliver(record.events ?? []);
        const next = record.events_next;
        // null on the last page; a next page that does not move on would never end.
        if (typeof next !== "number" || next <= after) break;
        after = next;
        record = await getRun(stream.runId, { after });
      }
      if (!stream.done) {
        this.status.following(record.status);
        if (isTerminal(record.status)) this.status.say(t("This run's full event log has expired."));
      }
    } catch (error) {
      if (stream !== this.stream) return;
      if (after > 0) {
        // Its first pages are shown: keep them.
        this.status.say(t("Could not load the rest of this run: {error}", { error: (error as Error).message }), "error");
      } else {
        this.forget();
        this.status.clear();
        this.status.say(t("The previous run is no longer available."));
      }
    }
    if (stream === this.stream) this.setPhase("idle");
  }

  private setPhase(phase: RunPhase): void {
    this.phase = phase;
    this.onPhase(phase);
    if (phase === "idle" && this.prepared) launcher.prepare();
  }

  /** Whether this page starts runs on a socket opened ahead (set by `prepareRuns`). */
  private prepared = false;

  /** From now on a socket for the next run (api.ts RunLauncher) is kept open whenever nothing
   *  runs: for a page whose runs start with api.ts startRun. */
  prepareRuns(): void {
    this.prepared = true;
    if (!this.busy) launcher.prepare();
  }
}
