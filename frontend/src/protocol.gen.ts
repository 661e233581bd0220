// Generated from executor/runner/protocol.py by `python -m executor.runner.protocol`.
// Do not edit: change the Python and regenerate (tests/unit/test_protocol.py checks it).

export const EVENT_TYPES = ["queued", "waiting", "started", "stdout", "stderr", "compiling", "compiled", "timing", "display", "error", "shapes", "profile", "finished"] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const TERMINAL_STATUSES = ["succeeded", "failed", "timed_out", "cancelled", "limit_exceeded", "lost"] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/** The codes the server closes a websocket with. */
export const CLOSE_CODES = {"bad_request": 4400, "unauthorized": 4401, "not_found": 4404, "too_many": 4429} as const;

/** Fields every event has. */
export interface BaseFields {
  seq: number;
  type: EventType;
  /** Server time in seconds. */
  ts?: number;
}

/** The run is waiting for an executor. */
export interface QueuedFields {
  position?: number | null;
}

/** An executor took the run, which waits there for an exclusive device (a TPU chip: executor/chips.py): how many wait ahead of it, about how long it will wait (from the turnarounds measured lately; absent before there are any), how many chips it asked for, and whether it is a notebook session's lease. Sent when that changes; the wait is not the run's own time (its wall time starts at "started"). */
export interface WaitingFields {
  worker?: string | null;
  device?: string | null;
  ahead?: number | null;
  eta_s?: number | null;
  chips?: number | null;
  lease?: boolean | null;
}

/** An executor took the run: where it runs. On an exclusive device, the chips it holds, how long it waited for them (apart from its own time), whether it runs on the runner its person's last run left on the chip (reused) and, for a notebook session, until when its lease lasts idle and how many wait for a chip. */
export interface StartedFields {
  worker?: string | null;
  kind?: string | null;
  device?: string | null;
  runtime?: string | null;
  sandboxed?: boolean | null;
  platform?: string | null;
  device_kind?: string | null;
  session?: string | null;
  cell?: number | null;
  session_started?: boolean | null;
  device_count?: number | null;
  memory_bytes?: number | null;
  jax_version?: string | null;
  jaxlib_version?: string | null;
  libraries?: Record<string, unknown> | null;
  chips?: string | null;
  waited_ms?: number | null;
  lease_until?: number | null;
  chip_waiting?: number | null;
  reused?: boolean | null;
}

/** Text the snippet wrote to stdout, in order, as it was produced. */
export interface StdoutFields {
  text: string;
}

/** Text the snippet wrote to stderr (and the playground's own notes). */
export interface StderrFields {
  text: string;
}

/** An XLA compilation of a user function that is taking a while; withdrawn with done=true when no compiled event follows. */
export interface CompilingFields {
  name?: string | null;
  signature?: string | null;
  via?: string | null;
  line?: number | null;
  call_line?: number | null;
  after_s?: number | null;
  done?: boolean | null;
}

/** One XLA compilation of a user function: its texts, times and costs. */
export interface CompiledFields {
  name: string;
  signature?: string | null;
  via?: string | null;
  line?: number | null;
  call_line?: number | null;
  module?: string | null;
  origin?: string | null;
  file?: string | null;
  in_types?: string[] | null;
  out_types?: string[] | null;
  static_args?: unknown | null;
  num_devices?: number | null;
  trace_ms?: number | null;
  lower_ms?: number | null;
  compile_ms?: number | null;
  flops?: number | null;
  transcendentals?: number | null;
  bytes_accessed?: number | null;
  optimal_seconds?: number | null;
  memory?: Record<string, unknown> | null;
  compiles?: number | null;
  recompile?: Record<string, unknown> | null;
  warning?: string | null;
  warning_parts?: unknown[] | null;
  jaxpr?: string | null;
  stablehlo?: string | null;
  hlo?: string | null;
  jaxpr_lines?: unknown[] | null;
  stablehlo_lines?: unknown[] | null;
  hlo_lines?: unknown[] | null;
  truncated?: string[] | null;
  capture_error?: string | null;
  cached?: boolean | null;
}

/** A measurement: %timeit, %time, jaxplay.bench, or a jaxplay.compare table (rows). */
export interface TimingFields {
  kind?: string | null;
  label?: string | null;
  line?: number | null;
  text?: string | null;
  repeats?: number | null;
  loops?: number | null;
  warmup?: number | null;
  mean_ms?: number | null;
  std_ms?: number | null;
  min_ms?: number | null;
  max_ms?: number | null;
  median_ms?: number | null;
  iqr_ms?: number | null;
  first_call_ms?: number | null;
  trace_ms?: number | null;
  compile_ms?: number | null;
  wall_ms?: number | null;
  cpu_user_ms?: number | null;
  cpu_sys_ms?: number | null;
  runs_ms?: unknown[] | null;
  blocked?: boolean | null;
  dispatch_only?: boolean | null;
  notes?: string[] | null;
  notes_parts?: unknown[] | null;
  note?: string | null;
  flops?: number | null;
  bytes_accessed?: number | null;
  gflops?: number | null;
  gbs?: number | null;
  platform?: string | null;
  device_kind?: string | null;
  dtype?: string | null;
  peak?: Record<string, unknown> | null;
  bandwidth_share?: number | null;
  flops_share?: number | null;
  donated?: boolean | null;
  cost_from?: string | null;
  baseline?: string | null;
  rows?: unknown[] | null;
  compile_cached?: boolean | null;
}

/** A rich value: a figure (PNG), jaxprs side by side, an array's summary. */
export interface DisplayFields {
  kind?: string | null;
  mime?: string | null;
  data?: string | null;
  text?: string | null;
  label?: string | null;
  name?: string | null;
  line?: number | null;
  width?: number | null;
  height?: number | null;
  figure?: number | null;
  panels?: unknown[] | null;
  shape?: unknown[] | null;
  dtype?: string | null;
  size?: number | null;
  nbytes?: number | null;
  array_type?: string | null;
  devices?: string[] | null;
  sharding?: string | null;
  partition_spec?: string | null;
  stats?: Record<string, unknown> | null;
}

/** The snippet raised: type, message, the snippet's line, a trimmed traceback; for an error we know, a plain explanation, with the template and args it was made from (a page says it in its reader's language). */
export interface ErrorFields {
  exc_type: string;
  message: string;
  line?: number | null;
  traceback?: string | null;
  explanation?: string | null;
  explanation_template?: string | null;
  explanation_args?: Record<string, unknown> | null;
}

/** What the snippet's top-level names held when it ended (arrays and pytrees of them), for the editor's hover: {name: {type, line, sharding}}. */
export interface ShapesFields {
  names: Record<string, unknown>;
  truncated?: boolean | null;
}

/** The run's profile (options.profile): where its trace is (Chrome Trace Event Format, gzipped), its size and events, its lanes (the host, then one per device), a summary per device (span, busy time, time per op kind, collective wait, top ops), what was cut, what the profile cost; or why there is none. "building": the trace is built from the raw profile after the run's end, outside its wall clock; its URL answers 202 until it is ready, and the trace itself says the rest. */
export interface ProfileFields {
  url?: string | null;
  bytes?: number | null;
  raw_bytes?: number | null;
  events?: number | null;
  lanes?: string[] | null;
  devices?: number | null;
  summary?: unknown[] | null;
  cut?: string | null;
  cut_parts?: unknown[] | null;
  profile_ms?: number | null;
  error?: string | null;
  error_parts?: unknown[] | null;
  building?: boolean | null;
}

/** The last event of every run: its terminal status and what it used; its message's template and args where the executor made it from one (an arg may be a message of its own: {template, args}). */
export interface FinishedFields {
  status: string;
  message?: string | null;
  wall_ms?: number | null;
  cpu_ms?: number | null;
  peak_memory_kb?: number | null;
  device_peak_bytes?: number | null;
  output_bytes?: number | null;
  events?: number | null;
  truncated?: boolean | null;
  message_template?: string | null;
  message_args?: Record<string, unknown> | null;
}

/** A websocket message that carries one part of a large event's JSON text. */
export const PART = "part";
export interface PartMessage {
  seq: number;
  type: typeof PART;
  of: string;
  part: number;
  parts: number;
  data: string;
}

export interface EventFields {
  queued: QueuedFields;
  waiting: WaitingFields;
  started: StartedFields;
  stdout: StdoutFields;
  stderr: StderrFields;
  compiling: CompilingFields;
  compiled: CompiledFields;
  timing: TimingFields;
  display: DisplayFields;
  error: ErrorFields;
  shapes: ShapesFields;
  profile: ProfileFields;
  finished: FinishedFields;
}
