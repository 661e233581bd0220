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
  /** The pinned libraries a snippet can import, name to version. */
  libraries?: Record<string, string> | null;
}

export interface OutputEvent extends Base {
  type: "stdout" | "stderr";
  text: string;
}

// The rich events (compiling, compiled, timing, display) come from code inside the sandbox that grows
// with the runner (executor/runner/capture.py, notebook.py, jaxplay.py, display.py): every field
// is optional here, renderers check what they get, and unknown kinds are shown as they come.

/** Snippet line numbers for each line of a text (null where none), e.g. `jaxpr_lines`. */
export type LineMap = (number | null)[];

/** An XLA compilation of a user function that is taking a while (sent once it has run for
 *  `after_s`); its `compiled` event follows when it is done, or, when it ends without one (an
 *  error the snippet caught), this event again with `done: true`. */
export interface CompilingEvent extends Base {
  type: "compiling";
  name?: string;
  /** e.g. "f(x: f32[3])". */
  signature?: string | null;
  via?: string | null;
  line?: number | null;
  call_line?: number | null;
  after_s?: number | null;
  done?: boolean;
}

/** One XLA compilation of a user function. Large texts may end with a "[truncated: ...]" mark. */
export interface CompiledEvent extends Base {
  type: "compiled";
  name?: string;
  /** e.g. "f(x: f32[3])". */
  signature?: string | null;
  /** How it was compiled: "jit", "pmap", ... */
  via?: string | null;
  /** Whose function: "snippet", "library" (optax, flax...), "jax" (a JAX function the
   *  snippet jitted itself, e.g. `jax.jit(jnp.sin)`) or "other" (code the snippet exec'd). */
  origin?: string | null;
  /** Where a library's or JAX's function lives (a path in the run's environment). */
  file?: string | null;
  /** Snippet lines: where the function is defined (for origin "jax": where the snippet jitted
   *  it), and the call that compiled it. */
  line?: number | null;
  call_line?: number | null;
  num_devices?: number | null;
  jaxpr?: string | null;
  stablehlo?: string | null;
  hlo?: string | null;
  jaxpr_lines?: LineMap | null;
  stablehlo_lines?: LineMap | null;
  hlo_lines?: LineMap | null;
  /** Which of the texts were cut to fit. */
  truncated?: string[] | null;
  trace_ms?: number | null;
  lower_ms?: number | null;
  compile_ms?: number | null;
  flops?: number | null;
  transcendentals?: number | null;
  bytes_accessed?: number | null;
  /** memory_analysis(): argument_bytes, output_bytes, temp_bytes, ... */
  memory?: Record<string, unknown> | null;
  /** Set when this function had compiled before: how many times, and why again. */
  recompile?: { count?: number | null; reason?: string | null; kind?: string | null } | null;
  /** e.g. that it keeps compiling inside a loop, and what to do. */
  warning?: string | null;
  /** The capture itself failed (the function still ran). */
  capture_error?: string | null;
}

/**
 * One measurement. kind "timeit" (%timeit: mean ± std per loop), "time" (%time: wall and CPU
 * time), "bench" or "single" (jaxplay.bench: median and spread, rates, share of the peak).
 */
export interface TimingSingle {
  kind?: string;
  label?: string;
  repeats?: number | null;
  loops?: number | null;
  mean_ms?: number | null;
  std_ms?: number | null;
  min_ms?: number | null;
  median_ms?: number | null;
  wall_ms?: number | null;
  cpu_user_ms?: number | null;
  cpu_sys_ms?: number | null;
  compile_ms?: number | null;
  gflops?: number | null;
  /** GB/s (older shape: gbps). */
  gbs?: number | null;
  gbps?: number | null;
  /** Fractions (0..1) of the device's known peak. */
  peak_share?: number | null;
  bandwidth_share?: number | null;
  flops_share?: number | null;
  peak_name?: string | null;
  /** Only the dispatch was timed (a JAX call not waited for). */
  dispatch_only?: boolean | null;
  donated?: boolean | null;
  /** Whose cost analysis the rates use, when not this function's own. */
  cost_from?: string | null;
  note?: string | null;
  notes?: string[] | null;
}

/** One implementation in a comparison; speedup is relative to the first row. */
export type TimingRow = TimingSingle & { speedup?: number | null };

/** Several implementations of one thing, timed side by side. */
export interface TimingComparison {
  kind: "comparison";
  label?: string;
  rows?: TimingRow[];
  baseline?: string | null;
  /** The snippet's own sentence about the comparison (jaxplay.compare(note=...)). */
  note?: string | null;
}

export type TimingEvent = Base & { type: "timing" } & (TimingSingle | TimingComparison) &
  Record<string, unknown>;

/** One jaxpr of a side-by-side display (older shape: {label, jaxpr}). */
export interface JaxprPanel {
  title?: string;
  label?: string;
  jaxpr?: string | null;
  jaxpr_lines?: LineMap | null;
  /** Why this transformation does not apply (grad of a non-scalar function...). */
  error?: string | null;
}

/**
 * A rich value: kind "figure" / mime "image/png" with base64 `data`; mime "text/plain" with
 * `text` (a value, kind "array" for an array's summary, with a `label`); kind "jaxprs" with
 * `panels` (f, grad(f), vmap(f) side by side); mime "text/html" (shown as text, never as
 * markup). Others are shown as they come.
 */
export interface DisplayEvent extends Base {
  type: "display";
  mime?: string;
  kind?: string;
  data?: string;
  text?: string;
  html?: string;
  label?: string | null;
  name?: string;
  panels?: JaxprPanel[];
  items?: JaxprPanel[];
  caption?: string;
  [field: string]: unknown;
}

export interface ErrorEvent extends Base {
  type: "error";
  exc_type: string;
  message: string;
  /** 1-based line in the user's snippet, when the error can be placed there. */
  line?: number | null;
  traceback?: string;
  /** One plain sentence about a JAX error (tracer leaks, concretisation, shapes...). */
  explanation?: string | null;
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
  | CompilingEvent
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
  "compiling",
  "compiled",
  "timing",
  "display",
  "error",
  "finished",
]);

/** The seq of anything shaped like an event ({seq: n >= 1, type: string}), else null. */
function eventSeq(data: unknown): number | null {
  if (typeof data !== "object" || data === null) return null;
  const ev = data as { seq?: unknown; type?: unknown };
  if (typeof ev.seq !== "number" || !Number.isInteger(ev.seq) || ev.seq < 1) return null;
  if (typeof ev.type !== "string") return null;
  return ev.seq;
}

/** Parses one event; null for anything that is not a well-formed event of a known type (a
 * newer server may add types: they are skipped, not fatal). */
export function parseEvent(data: unknown): RunEvent | null {
  if (eventSeq(data) === null) return null;
  if (!EVENT_TYPES.has((data as { type: string }).type)) return null;
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
    const parsed = events.filter((e) => eventSeq(e) !== null) as { seq: number }[];
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
    const seq = eventSeq(raw);
    if (seq === null) return;
    if (seq <= this.lastSeq) return; // already delivered: a replay overlapping live events
    if (seq !== this.lastSeq + 1) {
      // A hole: never show events out of order. Ask again from what we have.
      console.warn(`run ${this.runId}: got seq ${seq} after ${this.lastSeq}; reconnecting`);
      this.closeSocket();
      if (!this.stopped) this.scheduleReconnect();
      return;
    }
    this.lastSeq = seq;
    // A type this page does not know (a newer server's): it takes its place in the sequence,
    // and nothing shows it.
    const event = parseEvent(raw);
    if (event === null) return;
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
