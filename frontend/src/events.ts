// The run event contract and the websocket client: the only front-end module that knows them.
// Its Python twin is executor/events.py; extend both together, never rename.
//
// A run's events arrive as JSON objects {"seq": n, "type": ..., ...}; seq starts at 1 with no
// gaps and the last event is always "finished". The server replays everything after ?after=N
// before streaming live events, so a client that reconnects with after=<last seq it saw>
// misses nothing; events it has already seen are dropped here, so nothing is shown twice.

export const TERMINAL_STATUSES = [
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "limit_exceeded",
  "lost",
] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];
export type RunStatus = "queued" | "running" | TerminalStatus;

export function isTerminal(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

interface Base {
  seq: number;
  /** Server time in seconds, when the server adds it. */
  ts?: number;
}

export interface QueuedEvent extends Base {
  type: "queued";
  position?: number | null;
}

export interface StartedEvent extends Base {
  type: "started";
  worker?: string;
  platform?: string;
  device_kind?: string;
  device_count?: number;
  jax_version?: string;
}

export interface OutputEvent extends Base {
  type: "stdout" | "stderr";
  text: string;
}

export interface CompiledEvent extends Base {
  type: "compiled";
  name: string;
  jaxpr?: string;
  stablehlo?: string;
  hlo?: string;
  compile_ms?: number;
  flops?: number | null;
  bytes_accessed?: number | null;
}

export interface TimingEvent extends Base {
  type: "timing";
  label: string;
  [field: string]: unknown;
}

export interface DisplayEvent extends Base {
  type: "display";
  [field: string]: unknown;
}

export interface ErrorEvent extends Base {
  type: "error";
  exc_type: string;
  message: string;
  /** 1-based line in the user's snippet, when the error can be placed there. */
  line?: number | null;
  traceback?: string;
}

export interface FinishedEvent extends Base {
  type: "finished";
  status: TerminalStatus;
  wall_ms?: number | null;
  cpu_ms?: number | null;
  peak_memory_kb?: number | null;
  truncated?: boolean;
  message?: string | null;
}

export type RunEvent =
  | QueuedEvent
  | StartedEvent
  | OutputEvent
  | CompiledEvent
  | TimingEvent
  | DisplayEvent
  | ErrorEvent
  | FinishedEvent;

const EVENT_TYPES = new Set<string>([
  "queued",
  "started",
  "stdout",
  "stderr",
  "compiled",
  "timing",
  "display",
  "error",
  "finished",
]);

/** Parses one event; null for anything that is not a well-formed event of a known type (a
 * newer server may add types: they are skipped, not fatal). */
export function parseEvent(data: unknown): RunEvent | null {
  if (typeof data !== "object" || data === null) return null;
  const ev = data as { seq?: unknown; type?: unknown };
  if (typeof ev.seq !== "number" || !Number.isInteger(ev.seq) || ev.seq < 1) return null;
  if (typeof ev.type !== "string" || !EVENT_TYPES.has(ev.type)) return null;
  return data as RunEvent;
}

/** Close code the server uses for a run that does not exist (or that this client may not see). */
export const CLOSE_UNKNOWN_RUN = 4404;

export function runSocketPath(runId: string): string {
  return `/ws/runs/${encodeURIComponent(runId)}/`;
}

export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

export interface RunStreamHandlers {
  /** Each event exactly once, in seq order. */
  onEvent(event: RunEvent): void;
  /** The connection's state, for a "reconnecting…" hint. */
  onConnection?(state: ConnectionState): void;
  /** The server says the run does not exist; the stream has stopped. */
  onUnknownRun?(): void;
}

export interface RunStreamOptions {
  /** Websocket path, e.g. the `ws` field of POST /api/runs. Defaults to /ws/runs/<id>/. */
  path?: string;
  /** Events up to this seq have been seen already. */
  after?: number;
  /** Backoff between reconnects: starts here and doubles up to maxDelayMs. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Follows one run's events until "finished", reconnecting with backoff when the socket drops.
 *
 * Ordering guarantee: onEvent sees seq 1, 2, 3, ... with no repeats. If the socket ever
 * delivers a gap (it should not: the server replays from the log), the stream reconnects
 * from the last seq it delivered rather than showing events out of order.
 */
export class RunStream {
  readonly runId: string;
  private lastSeq: number;
  private finished = false;
  private stopped = false;
  private socket: WebSocket | null = null;
  private retryTimer: number | undefined;
  private delayMs: number;
  private readonly url: URL;
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    runId: string,
    private readonly handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ) {
    this.runId = runId;
    this.lastSeq = options.after ?? 0;
    this.minDelayMs = options.minDelayMs ?? 250;
    this.maxDelayMs = options.maxDelayMs ?? 4000;
    this.delayMs = this.minDelayMs;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.url = new URL(options.path ?? runSocketPath(runId), `${scheme}//${location.host}`);
    this.url.protocol = scheme;
    this.connect();
  }

  /** The last seq delivered to onEvent. */
  get seq(): number {
    return this.lastSeq;
  }

  get done(): boolean {
    return this.finished;
  }

  /** Stops following the run (the run itself goes on). */
  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.retryTimer);
    this.closeSocket();
  }

  /**
   * Delivers events obtained another way (GET /api/runs/<id>), through the same ordering and
   * duplicate rules as the socket's.
   */
  deliver(events: readonly unknown[]): void {
    const parsed = events.map(parseEvent).filter((e): e is RunEvent => e !== null);
    parsed.sort((a, b) => a.seq - b.seq);
    for (const event of parsed) this.accept(event);
  }

  private connect(): void {
    if (this.stopped || this.finished) return;
    const url = new URL(this.url);
    url.searchParams.set("after", String(this.lastSeq));
    const socket = new WebSocket(url);
    this.socket = socket;
    this.handlers.onConnection?.(this.delayMs === this.minDelayMs ? "connecting" : "reconnecting");

    socket.onopen = () => {
      if (socket === this.socket) this.handlers.onConnection?.("open");
    };
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      let data: unknown;
      try {
        data = JSON.parse(String(message.data));
      } catch {
        return;
      }
      const before = this.lastSeq;
      this.accept(data);
      // A fresh event proves the connection works: the next drop retries quickly again.
      if (this.lastSeq > before) this.delayMs = this.minDelayMs;
    };
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      if (this.stopped || this.finished) return;
      if (close.code === CLOSE_UNKNOWN_RUN) {
        this.stopped = true;
        this.handlers.onConnection?.("closed");
        this.handlers.onUnknownRun?.();
        return;
      }
      this.scheduleReconnect();
    };
    // onerror is always followed by onclose, which decides what to do.
  }

  private accept(raw: unknown): void {
    if (this.finished) return;
    const event = parseEvent(raw);
    if (event === null) return;
    if (event.seq <= this.lastSeq) return; // already delivered: a replay overlapping live events
    if (event.seq !== this.lastSeq + 1) {
      // A hole: never show events out of order. Ask again from what we have.
      console.warn(`run ${this.runId}: got seq ${event.seq} after ${this.lastSeq}; reconnecting`);
      this.closeSocket();
      if (!this.stopped) this.scheduleReconnect();
      return;
    }
    this.lastSeq = event.seq;
    if (event.type === "finished") {
      this.finished = true;
      // The server closes after "finished" too; closing here as well frees the socket at once.
      this.closeSocket();
      this.handlers.onConnection?.("closed");
    }
    this.handlers.onEvent(event);
  }

  private scheduleReconnect(): void {
    window.clearTimeout(this.retryTimer);
    this.handlers.onConnection?.("reconnecting");
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
    this.retryTimer = window.setTimeout(() => this.connect(), delay);
  }

  private closeSocket(): void {
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
  }
}
