// A profile's trace (Chrome Trace Event Format, as GET /api/runs/<id>/profile answers it) made
// into what the timeline draws: a lane per process (the host first, then each device), a row per
// thread, and in each row its events nested by time into levels. A level's events are sorted by
// start, with the latest end so far beside each, so a view finds the ones in range by binary
// search and never walks the rest. Events live in typed arrays, one slot per "X" event: a trace
// of 200,000 of them is a few megabytes, not 200,000 objects for the drawing to chase. No DOM.
import { t } from "../i18n";

/** The op kinds a trace's `cat` names (anything else is "other"), in the legend's order. */
export const KINDS = [
  "module",
  "fusion",
  "matmul",
  "convolution",
  "collective",
  "copy",
  "reduce",
  "elementwise",
  "custom-call",
  "control",
  "other",
  "wait",
  "python",
  "runtime",
  "compile",
] as const;
export type Kind = (typeof KINDS)[number];

/** Each kind's name as the page shows it; the kind itself stays the key (colours, data). */
const KIND_LABELS: Record<Kind, string> = {
  module: t("module"),
  fusion: t("fusion"),
  matmul: t("matmul"),
  convolution: t("convolution"),
  collective: t("collective"),
  copy: t("copy"),
  reduce: t("reduce"),
  elementwise: t("elementwise"),
  "custom-call": t("custom-call"),
  control: t("control"),
  other: t("other"),
  wait: t("wait"),
  python: t("python"),
  runtime: t("runtime"),
  compile: t("compile"),
};

/** A kind's name in the page's language ("fusion" -> "融合"); a kind it does not know, as is. */
export function kindLabel(kind: string): string {
  return Object.prototype.hasOwnProperty.call(KIND_LABELS, kind) ? KIND_LABELS[kind as Kind] : kind;
}

export const KIND_INDEX: ReadonlyMap<string, number> = new Map(KINDS.map((k, i) => [k, i]));
export const OTHER = KIND_INDEX.get("other")!;
export const WAIT = KIND_INDEX.get("wait")!;
export const COLLECTIVE = KIND_INDEX.get("collective")!;
export const MODULE = KIND_INDEX.get("module")!;

/** Nesting deeper than this is drawn on the last level (a runaway recursion, not a profile). */
const MAX_DEPTH = 32;

/** One level of a row: events that do not nest in one another, by start. */
export interface TraceLevel {
  /** Event ids, by start. */
  readonly ids: Int32Array;
  readonly starts: Float64Array;
  /** The latest end of the events up to each one: ends need not be sorted where events overlap
   *  without nesting, and this is. */
  readonly reach: Float64Array;
}

export interface TraceRow {
  readonly tid: string;
  /** The thread's name: "XLA Ops", "Python", ... */
  readonly name: string;
  readonly levels: TraceLevel[];
}

export interface TraceLane {
  readonly pid: string;
  /** The process's name: "Host", "TFRT_CPU_0", "/device:GPU:0". */
  readonly name: string;
  readonly device: boolean;
  readonly rows: TraceRow[];
}

export interface Trace {
  readonly lanes: TraceLane[];
  /** Its "X" events, by id: start and duration (µs), kind (an index in KINDS), name, args,
   *  and where each is drawn. */
  readonly count: number;
  readonly ts: Float64Array;
  readonly dur: Float64Array;
  readonly kind: Uint8Array;
  readonly names: string[];
  readonly args: (Record<string, unknown> | null)[];
  readonly lane: Uint16Array;
  readonly row: Uint16Array;
  readonly depth: Uint8Array;
  /** 1 where a "wait" event lies inside the event: a collective whose wait is drawn as its own
   *  child needs no wait drawn on itself. */
  readonly waited: Uint8Array;
  /** The event each lies in (-1: none). */
  readonly parent: Int32Array;
  /** The first start and the last end (µs). */
  readonly start: number;
  readonly end: number;
  /** What the trace says it left out ("" when whole), and the same as its sentences' parts
   *  (`[{template, args}]`) for a reader of another language. */
  readonly cut: string;
  readonly cutParts: unknown;
  /** The platform the trace says its devices are ("cpu", "gpu", "tpu"; "" when it does not). */
  readonly platform: string;
  /** Where most of the devices' work lies (µs): the shortest stretch holding 80 % of their ops'
   *  time; null without any device events. */
  readonly deviceStart: number | null;
  readonly deviceEnd: number | null;
}

export class TraceError extends Error {}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A pid or tid as a key: numbers and strings both occur in the format. */
function key(value: unknown): string | null {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "string") return value;
  return null;
}

interface Process {
  name: string;
  sort: number | null;
  device: boolean;
}

interface Thread {
  name: string;
  sort: number | null;
}

/** A device's lane by its name, when the trace does not label it (another producer's). */
const DEVICE_NAME = /(^|\/)device:|^(TFRT_)?(CPU|GPU|TPU)[_:]?\d|^\/job:/i;

/** Reads a trace: `{traceEvents: [...]}` or a bare list of events. Throws TraceError when it is
 *  neither, or holds no complete ("X") event. */
export function parseTrace(data: unknown): Trace {
  const raw = Array.isArray(data) ? data : isObject(data) && Array.isArray(data.traceEvents) ? data.traceEvents : null;
  if (raw === null) throw new TraceError(t("The trace has no traceEvents."));
  const other = isObject(data) && isObject(data.otherData) ? data.otherData : {};

  const processes = new Map<string, Process>();
  const threads = new Map<string, Thread>();
  const process = (pid: string): Process => {
    let p = processes.get(pid);
    if (!p) {
      p = { name: "", sort: null, device: false };
      processes.set(pid, p);
    }
    return p;
  };

  // The events as they come, then grouped by thread.
  const ts: number[] = [];
  const dur: number[] = [];
  const names: string[] = [];
  const kinds: number[] = [];
  const args: (Json | null)[] = [];
  const byThread = new Map<string, number[]>();

  for (const e of raw as unknown[]) {
    if (!isObject(e)) continue;
    const pid = key(e.pid);
    if (pid === null) continue;
    if (e.ph === "M") {
      const a = isObject(e.args) ? e.args : {};
      if (e.name === "process_name" && typeof a.name === "string") process(pid).name = a.name;
      else if (e.name === "process_sort_index" && typeof a.sort_index === "number") process(pid).sort = a.sort_index;
      else if (e.name === "process_labels" && typeof a.labels === "string") {
        if (a.labels.split(",").some((label) => label.trim() === "device")) process(pid).device = true;
      } else if (e.name === "thread_name" || e.name === "thread_sort_index") {
        const tid = key(e.tid);
        if (tid === null) continue;
        const k = `${pid}\u0000${tid}`;
        const thread = threads.get(k) ?? { name: "", sort: null };
        if (e.name === "thread_name" && typeof a.name === "string") thread.name = a.name;
        if (e.name === "thread_sort_index" && typeof a.sort_index === "number") thread.sort = a.sort_index;
        threads.set(k, thread);
      }
      continue;
    }
    if (e.ph !== "X") continue;
    const start = e.ts;
    if (typeof start !== "number" || !Number.isFinite(start)) continue;
    const d = typeof e.dur === "number" && Number.isFinite(e.dur) && e.dur > 0 ? e.dur : 0;
    const tid = key(e.tid) ?? "0";
    const k = `${pid}\u0000${tid}`;
    process(pid);
    const id = ts.length;
    ts.push(start);
    dur.push(d);
    names.push(typeof e.name === "string" ? e.name : "");
    kinds.push(KIND_INDEX.get(typeof e.cat === "string" ? e.cat : "") ?? OTHER);
    args.push(isObject(e.args) ? e.args : null);
    let list = byThread.get(k);
    if (!list) {
      list = [];
      byThread.set(k, list);
    }
    list.push(id);
  }
  if (ts.length === 0 && processes.size === 0) throw new TraceError(t("The trace holds no events."));

  // Lanes: by the sort index the trace gives, then by pid; the host's before the devices'.
  const pids = [...processes.keys()];
  for (const pid of pids) {
    const p = processes.get(pid)!;
    if (!p.name) p.name = t("Process {pid}", { pid });
    if (!p.device && DEVICE_NAME.test(p.name)) p.device = true;
  }
  const numeric = (s: string) => (Number.isFinite(Number(s)) ? Number(s) : Number.MAX_SAFE_INTEGER);
  pids.sort((a, b) => {
    const pa = processes.get(a)!;
    const pb = processes.get(b)!;
    return (
      (pa.sort ?? numeric(a)) - (pb.sort ?? numeric(b)) ||
      Number(pa.device) - Number(pb.device) ||
      numeric(a) - numeric(b) ||
      a.localeCompare(b)
    );
  });

  const count = ts.length;
  const out = {
    ts: Float64Array.from(ts),
    dur: Float64Array.from(dur),
    kind: Uint8Array.from(kinds),
    lane: new Uint16Array(count),
    row: new Uint16Array(count),
    depth: new Uint8Array(count),
    waited: new Uint8Array(count),
    parent: new Int32Array(count).fill(-1),
  };
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < count; i++) {
    if (out.ts[i] < first) first = out.ts[i];
    if (out.ts[i] + out.dur[i] > last) last = out.ts[i] + out.dur[i];
  }
  if (count === 0) first = last = 0;

  const lanes: TraceLane[] = [];
  for (const pid of pids) {
    const p = processes.get(pid)!;
    const tids = [...byThread.keys()].filter((k) => k.slice(0, k.indexOf("\u0000")) === pid);
    tids.sort((a, b) => {
      const ta = threads.get(a);
      const tb = threads.get(b);
      const ia = a.slice(a.indexOf("\u0000") + 1);
      const ib = b.slice(b.indexOf("\u0000") + 1);
      return (ta?.sort ?? numeric(ia)) - (tb?.sort ?? numeric(ib)) || ia.localeCompare(ib);
    });
    const laneIndex = lanes.length;
    const rows: TraceRow[] = tids.map((k, rowIndex) => {
      const tid = k.slice(k.indexOf("\u0000") + 1);
      const ids = byThread.get(k)!;
      const levels = nest(ids, out, laneIndex, rowIndex);
      return { tid, name: threads.get(k)?.name || t("Thread {tid}", { tid }), levels };
    });
    lanes.push({ pid, name: p.name, device: p.device, rows });
  }

  return {
    lanes,
    count,
    ...out,
    names,
    args,
    start: first,
    end: last,
    cut: typeof other.cut === "string" ? other.cut : "",
    cutParts: other.cut_parts ?? null,
    platform: typeof other.platform === "string" ? other.platform : "",
    ...deviceSpan(lanes, out.ts, out.dur),
  };
}

/** Where the devices' work lies: the shortest stretch of the trace that holds most (80 %) of
 *  their top-level ops' time. Not their first op to their last: a run's eager ops before its
 *  training loop (a random key, an array put on the devices) are a few scattered slivers that
 *  would stretch the frame over the whole trace. Found on 512 bins of the trace's span. */
function deviceSpan(lanes: TraceLane[], ts: Float64Array, dur: Float64Array): { deviceStart: number | null; deviceEnd: number | null } {
  let first = Infinity;
  let last = -Infinity;
  const tops: number[] = [];
  for (const lane of lanes) {
    if (!lane.device) continue;
    for (const row of lane.rows) {
      const top = row.levels[0];
      if (!top) continue;
      for (const id of top.ids) {
        tops.push(id);
        if (ts[id] < first) first = ts[id];
        if (ts[id] + dur[id] > last) last = ts[id] + dur[id];
      }
    }
  }
  if (!Number.isFinite(first)) return { deviceStart: null, deviceEnd: null };
  const span = last - first;
  if (span <= 0) return { deviceStart: first, deviceEnd: last };
  const BINS = 512;
  const width = span / BINS;
  const bins = new Float64Array(BINS);
  let total = 0;
  for (const id of tops) {
    // An op's time spread over the bins it covers.
    const a = ts[id] - first;
    const b = a + Math.max(dur[id], 1e-3);
    for (let i = Math.min(BINS - 1, Math.floor(a / width)); i < BINS && i * width < b; i++) {
      const share = Math.min(b, (i + 1) * width) - Math.max(a, i * width);
      if (share > 0) {
        bins[i] += share;
        total += share;
      }
    }
  }
  // The shortest run of bins holding 80 % of it (two pointers).
  const want = total * 0.8;
  let best: [number, number] = [0, BINS - 1];
  let sum = 0;
  let lo = 0;
  for (let hi = 0; hi < BINS; hi++) {
    sum += bins[hi];
    while (lo < hi && sum - bins[lo] >= want) sum -= bins[lo++];
    if (sum >= want && hi - lo < best[1] - best[0]) best = [lo, hi];
  }
  return { deviceStart: first + best[0] * width, deviceEnd: first + (best[1] + 1) * width };
}

/** Nests one thread's events by time (a child lies inside its parent) into levels. */
function nest(
  ids: number[],
  e: {
    ts: Float64Array;
    dur: Float64Array;
    kind: Uint8Array;
    lane: Uint16Array;
    row: Uint16Array;
    depth: Uint8Array;
    waited: Uint8Array;
    parent: Int32Array;
  },
  lane: number,
  row: number,
): TraceLevel[] {
  // By start, and the longer first at the same start: a parent before its children.
  ids.sort((a, b) => e.ts[a] - e.ts[b] || e.dur[b] - e.dur[a] || a - b);
  const stack: number[] = [];
  const perLevel: number[][] = [];
  for (const id of ids) {
    const start = e.ts[id];
    // A parent ends at or after its child: an event that begins where another ends is its
    // sibling, not its child. A tolerance of a nanosecond absorbs the format's rounding.
    while (stack.length && e.ts[stack[stack.length - 1]] + e.dur[stack[stack.length - 1]] <= start + 1e-3) stack.pop();
    const parent = stack.length ? stack[stack.length - 1] : -1;
    e.parent[id] = parent;
    e.lane[id] = lane;
    e.row[id] = row;
    if (e.kind[id] === WAIT && parent >= 0) {
      // A wait is drawn over the op it lies in (a collective's wait for its peers), on its level:
      // which part of the op was waiting shows where the op is, and takes no row of its own.
      e.waited[parent] = 1;
      e.depth[id] = e.depth[parent];
      perLevel[e.depth[id]].push(id);
      continue;
    }
    const depth = Math.min(stack.length, MAX_DEPTH - 1);
    e.depth[id] = depth;
    (perLevel[depth] ??= []).push(id);
    if (stack.length < MAX_DEPTH) stack.push(id);
  }
  return perLevel.map((list) => {
    const n = list.length;
    const level = { ids: Int32Array.from(list), starts: new Float64Array(n), reach: new Float64Array(n) };
    let reach = -Infinity;
    for (let i = 0; i < n; i++) {
      const id = list[i];
      level.starts[i] = e.ts[id];
      reach = Math.max(reach, e.ts[id] + e.dur[id]);
      level.reach[i] = reach;
    }
    return level;
  });
}

/** The first index from `from` whose reach is at least `t`: before it, every event has ended. */
export function firstReaching(level: TraceLevel, t: number, from = 0): number {
  let lo = from;
  let hi = level.reach.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (level.reach[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The event of `level` at time `t`, or the nearest within `slack` µs; null when none. */
export function eventAt(trace: Trace, level: TraceLevel, t: number, slack: number): number | null {
  let best: number | null = null;
  let bestDistance = Infinity;
  for (let i = firstReaching(level, t - slack); i < level.ids.length && level.starts[i] <= t + slack; i++) {
    const id = level.ids[i];
    const start = trace.ts[id];
    const end = start + trace.dur[id];
    const distance = t < start ? start - t : t > end ? t - end : 0;
    // Inside one: the shortest (the one drawn on top of a merged column).
    const better = distance < bestDistance || (distance === 0 && bestDistance === 0 && best !== null && trace.dur[id] < trace.dur[best]);
    if (distance <= slack && better) {
      best = id;
      bestDistance = distance;
    }
  }
  return best;
}

/** The level an event is drawn on. */
export function levelOf(trace: Trace, id: number): TraceLevel {
  return trace.lanes[trace.lane[id]].rows[trace.row[id]].levels[trace.depth[id]];
}

/** The event before (-1) or after (+1) `id` on its level, or null at either end. */
export function neighbour(trace: Trace, id: number, step: -1 | 1): number | null {
  const level = levelOf(trace, id);
  let lo = 0;
  let hi = level.starts.length;
  const start = trace.ts[id];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (level.starts[mid] < start) lo = mid + 1;
    else hi = mid;
  }
  let i = lo;
  while (i < level.ids.length && level.ids[i] !== id) i++;
  const next = i + step;
  return i < level.ids.length && next >= 0 && next < level.ids.length ? level.ids[next] : null;
}

/** A field of an event's args: a string, or null. */
export function argText(trace: Trace, id: number, name: string): string | null {
  const value = trace.args[id]?.[name];
  return typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null;
}

/** A number of an event's args, or null. */
export function argNumber(trace: Trace, id: number, name: string): number | null {
  const value = trace.args[id]?.[name];
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
