// The run event contract and the websocket client: the only front-end module that knows them.
// The contract itself is declared once, in executor/runner/protocol.py, and generated into
// protocol.gen.ts; the types here build on it (narrower where the page knows more, with the doc
// comments the page's readers need), and the checks below fail `tsc` when one of them declares
// a field the protocol does not have.
//
// A run's events arrive as JSON objects {"seq": n, "type": ..., ...}; seq starts at 1 with no
// gaps and the last event is always "finished". The server replays everything after ?after=N
// before streaming live events, so a client that reconnects with after=<last seq it saw>
// misses nothing; events it has already seen are dropped here, so nothing is shown twice. An
// event too large for one websocket message comes as consecutive "part" messages, joined here.

import {
  CLOSE_CODES,
  EVENT_TYPES,
  PART,
  TERMINAL_STATUSES,
  type BaseFields,
  type CompiledFields,
  type CompilingFields,
  type DisplayFields,
  type ErrorFields,
  type EventType,
  type FinishedFields,
  type PartMessage,
  type ProfileFields,
  type QueuedFields,
  type ShapesFields,
  type StartedFields,
  type StderrFields,
  type StdoutFields,
  type TerminalStatus,
  type TimingFields,
  type WaitingFields,
} from "./protocol.gen";

export { TERMINAL_STATUSES };
export type { EventType, TerminalStatus };
export type RunStatus = "queued" | "running" | TerminalStatus;

export function isTerminal(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

export interface QueuedEvent extends BaseFields, QueuedFields {
  type: "queued";
}

/** An executor took the run, which waits there for an exclusive device (a TPU chip). */
export interface WaitingEvent extends BaseFields, WaitingFields {
  type: "waiting";
}

export interface StartedEvent extends BaseFields, StartedFields {
  type: "started";
  /** The pinned libraries a snippet can import, name to version. */
  libraries?: Record<string, string> | null;
}

export interface OutputEvent extends BaseFields, StdoutFields, StderrFields {
  type: "stdout" | "stderr";
}

// The rich events (compiling, compiled, timing, display) come from code inside the sandbox that grows
// with the runner (executor/runner/capture.py, notebook.py, jaxplay.py, display.py): every field
// but a few is optional, renderers check what they get, and unknown kinds are shown as they come.

/** Snippet line numbers for each line of a text (null where none), e.g. `jaxpr_lines`. */
export type LineMap = (number | null)[];

/** An XLA compilation of a user function that is taking a while (sent once it has run for
 *  `after_s`); its `compiled` event follows when it is done, or, when it ends without one (an
 *  error the snippet caught), this event again with `done: true`. */
export interface CompilingEvent extends BaseFields, CompilingFields {
  type: "compiling";
  /** e.g. "f(x: f32[3])". */
  signature?: string | null;
}

/** One XLA compilation of a user function. Large texts may end with a "[truncated: ...]" mark. */
export interface CompiledEvent extends BaseFields, CompiledFields {
  type: "compiled";
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
  jaxpr_lines?: LineMap | null;
  stablehlo_lines?: LineMap | null;
  hlo_lines?: LineMap | null;
  /** Which of the texts were cut to fit. */
  truncated?: string[] | null;
  /** memory_analysis(): argument_bytes, output_bytes, temp_bytes, ... */
  memory?: Record<string, unknown> | null;
  /** Set when this function had compiled before: how many times, and why again. */
  recompile?: {
    count?: number | null; reason?: string | null; kind?: string | null;
    /** The reasons' sentences as [{template, args}], for a page in another language. */
    reason_parts?: unknown;
  } | null;
  /** e.g. that it keeps compiling inside a loop, and what to do. */
  warning?: string | null;
  /** The warning's sentences as [{template, args}]. */
  warning_parts?: unknown[] | null;
  /** The capture itself failed (the function still ran). */
  capture_error?: string | null;
}

/**
 * One measurement. kind "timeit" (%timeit: mean ± std per loop), "time" (%time: wall and CPU
 * time), "bench" or "single" (jaxplay.bench: median and spread, rates, share of the peak).
 */
export interface TimingSingle extends TimingFields {
  /** GB/s. */
  gbs?: number | null;
  /** The device's known peak, when there is one: its name, bandwidth_gbs, tflops, dtype. */
  peak?: { name?: string | null; bandwidth_gbs?: number | null; tflops?: number | null; dtype?: string | null } | null;
  /** Fractions (0..1) of the device's known peak. */
  bandwidth_share?: number | null;
  flops_share?: number | null;
  /** Only the dispatch was timed (a JAX call not waited for). */
  dispatch_only?: boolean | null;
  /** Whose cost analysis the rates use, when not this function's own. */
  cost_from?: string | null;
}

/** One implementation in a comparison (a bench's fields); speedup is relative to the first row.
 *  Rows are a list in the protocol, so nothing checks them: renderers check what they get. */
export type TimingRow = TimingSingle & { speedup?: number | null };

/** Several implementations of one thing, timed side by side. */
export interface TimingComparison extends TimingFields {
  kind: "comparison";
  rows?: TimingRow[] | null;
  /** The first row's label: speed-ups are against it. */
  baseline?: string | null;
  /** The snippet's own sentence about the comparison (jaxplay.compare(note=...)). */
  note?: string | null;
}

export type TimingEvent = BaseFields & { type: "timing" } & (TimingSingle | TimingComparison);

/** One jaxpr of a side-by-side display. */
export interface JaxprPanel {
  title?: string;
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
export interface DisplayEvent extends BaseFields, DisplayFields {
  type: "display";
  panels?: JaxprPanel[] | null;
}

export interface ErrorEvent extends BaseFields, ErrorFields {
  type: "error";
  /** 1-based line in the user's snippet, when the error can be placed there. */
  line?: number | null;
  /** One plain sentence about a JAX error (tracer leaks, concretisation, shapes...). */
  explanation?: string | null;
}

export interface FinishedEvent extends BaseFields, FinishedFields {
  type: "finished";
  status: TerminalStatus;
}

/** One device lane of a profile's summary (times in µs): its span, the time its top-level ops
 *  took (busy), what its collectives spent waiting for their peers, that time per op kind, and
 *  its top ops as [name, kind, count, total µs]. */
export interface ProfileSummaryRow {
  device?: string | null;
  span_us?: number | null;
  busy_us?: number | null;
  wait_us?: number | null;
  kinds?: Record<string, number> | null;
  ops?: [string, string, number, number][] | null;
}

/**
 * The run ran under jax.profiler (the run's `options.profile`): `url` answers its trace (Chrome
 * Trace Event Format, one process lane for the host and one per device), `summary` has a row
 * per device lane. `cut` says what the trace left out; `error` why there is none.
 */
export interface ProfileEvent extends BaseFields, ProfileFields {
  type: "profile";
  /** The trace's size gzipped, and as JSON. */
  bytes?: number | null;
  raw_bytes?: number | null;
  /** Its "X" events. */
  events?: number | null;
  /** Its process lanes, in order: "Host", then the devices. */
  lanes?: string[] | null;
  summary?: ProfileSummaryRow[] | null;
  /** What stopping the profiler and converting its trace cost the run. */
  profile_ms?: number | null;
}

/** What the snippet's top-level names held when it ended: name → {type ("f32[3,4]"), line, sharding}. */
export interface ShapesEvent extends BaseFields, ShapesFields {
  type: "shapes";
  names: Record<string, { type: string; line?: number; sharding?: string }>;
}

export type RunEvent =
  | QueuedEvent
  | WaitingEvent
  | StartedEvent
  | OutputEvent
  | CompilingEvent
  | CompiledEvent
  | TimingEvent
  | DisplayEvent
  | ErrorEvent
  | ShapesEvent
  | ProfileEvent
  | FinishedEvent;

// Compile-time checks against protocol.gen.ts: `tsc` fails, naming the field, when a type here
// declares a field Python never sends (Extra<...> is not never), or when the protocol has an
// event type RunEvent leaves out.

/** The fields E declares that F (and the fields every event has) do not. */
type Extra<E, F> = Exclude<keyof E, keyof F | keyof BaseFields>;
type None<T extends never> = T;

export type ProtocolChecks = [
  None<Extra<QueuedEvent, QueuedFields>>,
  None<Extra<WaitingEvent, WaitingFields>>,
  None<Extra<StartedEvent, StartedFields>>,
  None<Extra<OutputEvent, StdoutFields>>,
  None<Extra<OutputEvent, StderrFields>>,
  None<Extra<CompilingEvent, CompilingFields>>,
  None<Extra<CompiledEvent, CompiledFields>>,
  None<Extra<TimingSingle, TimingFields>>,
  None<Extra<TimingComparison, TimingFields>>,
  None<Extra<DisplayEvent, DisplayFields>>,
  None<Extra<ErrorEvent, ErrorFields>>,
  None<Extra<ShapesEvent, ShapesFields>>,
  None<Extra<ProfileEvent, ProfileFields>>,
  None<Extra<FinishedEvent, FinishedFields>>,
  None<Exclude<EventType, RunEvent["type"]>>,
];

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

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
  if (!KNOWN_TYPES.has((data as { type: string }).type)) return null;
  return data as RunEvent;
}

/** Whether a message is a part of a large event rather than an event. */
function isPart(data: unknown): boolean {
  return typeof data === "object" && data !== null && (data as { type?: unknown }).type === PART;
}

/** A well-formed part message ({seq, type: "part", of, part: i, parts: k, data}, 1 <= i <= k). */
function wellFormedPart(data: unknown): data is PartMessage {
  if (eventSeq(data) === null || !isPart(data)) return false;
  const m = data as Partial<Record<keyof PartMessage, unknown>>;
  return (
    typeof m.of === "string" &&
    typeof m.data === "string" &&
    typeof m.part === "number" &&
    typeof m.parts === "number" &&
    Number.isInteger(m.part) &&
    Number.isInteger(m.parts) &&
    m.part >= 1 &&
    m.part <= m.parts
  );
}

/**
 * Joins the parts of an event too large for one websocket message: one per socket, since a new
 * socket replays from the last whole event (a half-joined one is dropped with its socket).
 */
class PartJoiner {
  private seq = 0;
  private of = "";
  private pieces: string[] = [];
  private parts = 0;

  /**
   * Takes the next part: the whole event's JSON text once its last part is in, null while more
   * are due, or "broken" when the parts do not follow on (whatever was joined is dropped).
   */
  add(part: PartMessage): string | null | "broken" {
    if (part.part === 1) {
      this.seq = part.seq;
      this.of = part.of;
      this.parts = part.parts;
      this.pieces = [];
    } else if (
      part.seq !== this.seq ||
      part.of !== this.of ||
      part.parts !== this.parts ||
      part.part !== this.pieces.length + 1
    ) {
      this.clear();
      return "broken";
    }
    this.pieces.push(part.data);
    if (part.part < part.parts) return null;
    const text = this.pieces.join("");
    this.clear();
    return text;
  }

  private clear(): void {
    this.seq = 0;
    this.of = "";
    this.parts = 0;
    this.pieces = [];
  }
}

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
  /** A socket already carrying the run (the run socket it was started on), and the messages it
   *  brought before this stream took it; a reconnect uses `path`. */
  launched?: { socket: WebSocket; early: string[] };
  /** The run's events as another socket carries them (a notebook session's, whose cell it is);
   *  when that closes, the stream goes on on `path` from the last event it had. */
  feed?: EventFeed;
}

/** A run's events carried on a socket that is not the run's own (a notebook session's: its
 *  messages unwrapped by whoever reads it), for a RunStream to follow. */
export interface EventFeed {
  /** Whether it can carry no more (its socket closed). */
  readonly closed: boolean;
  /** Each message (an event, or a part of one) in order, those that came before included, then
   *  `onClose` if its socket closes before the stream is done with it. */
  listen(onMessage: (data: unknown) => void, onClose: () => void): void;
  /** The stream is done with it (the run finished, or the stream stopped). */
  release(): void;
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
  private feed: EventFeed | null = null;
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
    if (options.feed && !options.feed.closed) this.follow(options.feed);
    else this.connect(options.launched);
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

  private connect(launched?: { socket: WebSocket; early: string[] }): void {
    if (this.stopped || this.finished) return;
    let socket: WebSocket;
    if (launched && launched.socket.readyState === WebSocket.OPEN) {
      socket = launched.socket;
    } else {
      const url = new URL(this.url);
      url.searchParams.set("after", String(this.lastSeq));
      socket = new WebSocket(url);
      launched = undefined;
    }
    this.socket = socket;
    const joiner = new PartJoiner();
    this.handlers.onConnection?.(launched ? "open" : this.delayMs === this.minDelayMs ? "connecting" : "reconnecting");

    socket.onopen = () => {
      if (socket === this.socket) this.handlers.onConnection?.("open");
    };
    const receive = (text: string) => {
      if (socket !== this.socket) return;
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch {
        return;
      }
      this.take(data, joiner);
    };
    socket.onmessage = (message) => receive(String(message.data));
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      if (this.stopped || this.finished) return;
      // A run that does not exist (or that this client may not see).
      if (close.code === CLOSE_CODES.not_found) {
        this.stopped = true;
        this.handlers.onConnection?.("closed");
        this.handlers.onUnknownRun?.();
        return;
      }
      this.scheduleReconnect();
    };
    // onerror is always followed by onclose, which decides what to do.
    for (const text of launched?.early.splice(0) ?? []) receive(text);
  }

  /** Follows the run on `feed` (another socket's) until it closes, then on its own socket. */
  private follow(feed: EventFeed): void {
    this.feed = feed;
    const joiner = new PartJoiner();
    this.handlers.onConnection?.("open");
    feed.listen(
      (data) => {
        if (feed === this.feed) this.take(data, joiner);
      },
      () => {
        if (feed !== this.feed) return;
        this.feed = null;
        if (!this.stopped && !this.finished) this.connect();
      },
    );
  }

  /** One message: an event, or a part of one. */
  private take(data: unknown, joiner: PartJoiner): void {
    const before = this.lastSeq;
    if (isPart(data)) this.acceptPart(data, joiner);
    else this.accept(data);
    // A fresh event proves the connection works: the next drop retries quickly again.
    if (this.lastSeq > before) this.delayMs = this.minDelayMs;
  }

  private accept(raw: unknown): void {
    if (this.finished) return;
    const seq = eventSeq(raw);
    if (seq === null) return;
    if (seq <= this.lastSeq) return; // already delivered: a replay overlapping live events
    if (seq !== this.lastSeq + 1) {
      // A hole: never show events out of order. Ask again from what we have.
      console.warn(`run ${this.runId}: got seq ${seq} after ${this.lastSeq}; reconnecting`);
      this.reconnectNow();
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

  /** One part of a large event: the event goes to accept once all its parts are in. A part
   *  that is not well formed is dropped like any message that is not an event (never taken for
   *  an event of an unknown type, which would pass over its seq). */
  private acceptPart(raw: unknown, joiner: PartJoiner): void {
    if (!wellFormedPart(raw)) return;
    const part = raw;
    if (this.finished || part.seq <= this.lastSeq) return; // already delivered
    const text = joiner.add(part);
    if (text === null) return;
    if (text === "broken") {
      // A part missing or out of order: ask again from the last whole event.
      console.warn(`run ${this.runId}: part ${part.part}/${part.parts} of seq ${part.seq} out of order; reconnecting`);
      this.reconnectNow();
      return;
    }
    let event: unknown = null;
    try {
      event = JSON.parse(text);
    } catch {
      // Falls through: not an event.
    }
    if (eventSeq(event) !== part.seq || (event as { type: string }).type !== part.of) {
      // Its parts were all there, in order, and still do not make the event: asking again
      // would get the same. It takes its place in the sequence, like a type this page does
      // not know, and nothing shows it.
      console.warn(`run ${this.runId}: the parts of seq ${part.seq} do not make a ${part.of} event; skipped`);
      event = { seq: part.seq, type: PART }; // no event type: accept passes over its seq
    }
    this.accept(event);
  }

  private reconnectNow(): void {
    this.closeSocket();
    if (!this.stopped) this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    window.clearTimeout(this.retryTimer);
    this.handlers.onConnection?.("reconnecting");
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
    this.retryTimer = window.setTimeout(() => this.connect(), delay);
  }

  private closeSocket(): void {
    const feed = this.feed;
    this.feed = null;
    feed?.release();
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
  }
}
