// What a profile says per device, as the summary table shows it: the span of its work, the time
// its top-level ops took (busy) and the rest (idle), what its collectives waited for their
// peers, that time per op kind, and its top ops. Read from the profile event's `summary` (the
// runner's, exact even where the trace was cut), or worked out from a trace when there is no
// event (a trace given to the page by hand). No DOM.
import type { ProfileEvent } from "../events";
import { num, str } from "../format";
import { t } from "../i18n";
import { COLLECTIVE, KINDS, MODULE, WAIT, argNumber, type Trace } from "./trace";

export interface OpTotal {
  name: string;
  kind: string;
  count: number;
  /** µs. */
  total: number;
}

export interface DeviceSummary {
  device: string;
  /** µs. */
  span: number;
  busy: number;
  wait: number;
  /** µs of top-level ops per kind, the largest first. */
  kinds: [string, number][];
  /** The largest first. */
  ops: OpTotal[];
}

/** The event's summary rows, checked (each field may be missing or of the wrong type). */
export function summaryOfEvent(event: ProfileEvent): DeviceSummary[] {
  if (!Array.isArray(event.summary)) return [];
  return event.summary
    .filter((row) => row && typeof row === "object")
    .map((row, i) => {
      const kinds: [string, number][] = [];
      if (row.kinds && typeof row.kinds === "object") {
        for (const [kind, us] of Object.entries(row.kinds)) {
          const n = num(us);
          if (n !== null) kinds.push([kind, n]);
        }
      }
      const ops: OpTotal[] = [];
      if (Array.isArray(row.ops)) {
        for (const op of row.ops) {
          if (!Array.isArray(op)) continue;
          const [name, kind, count, total] = op as unknown[];
          if (typeof name !== "string" || num(total) === null) continue;
          ops.push({ name, kind: str(kind) ?? "other", count: num(count) ?? 1, total: num(total)! });
        }
      }
      return {
        device: str(row.device) ?? t("Device {n}", { n: i }),
        span: num(row.span_us) ?? 0,
        busy: num(row.busy_us) ?? 0,
        wait: num(row.wait_us) ?? 0,
        kinds: kinds.sort((a, b) => b[1] - a[1]),
        ops: ops.sort((a, b) => b.total - a.total),
      };
    });
}

/** The same, worked out from a trace: per device lane, its top-level ops (those on no other op,
 *  modules aside) by kind and by name, and the union of their spans as its busy time. */
export function summaryOfTrace(trace: Trace): DeviceSummary[] {
  const out: DeviceSummary[] = [];
  trace.lanes.forEach((lane) => {
    if (!lane.device) return;
    let first = Infinity;
    let last = -Infinity;
    let wait = 0;
    let waitEvents = 0;
    const spans: [number, number][] = [];
    const kinds = new Map<string, number>();
    const ops = new Map<string, OpTotal>();
    for (const row of lane.rows) {
      row.levels.forEach((level) => {
        for (const id of level.ids) {
          const start = trace.ts[id];
          const end = start + trace.dur[id];
          first = Math.min(first, start);
          last = Math.max(last, end);
          const kind = trace.kind[id];
          if (kind === WAIT) waitEvents += trace.dur[id];
          if (kind === COLLECTIVE) wait += argNumber(trace, id, "wait_us") ?? 0;
        }
      });
      // Top-level ops: the first level of the row with an op on it (modules, when a row nests
      // its ops in them, are not ops).
      const top = row.levels.find((level) => level.ids.some((id) => trace.kind[id] !== MODULE));
      if (!top) continue;
      for (const id of top.ids) {
        const kind = trace.kind[id];
        if (kind === MODULE || kind === WAIT) continue;
        const d = trace.dur[id];
        spans.push([trace.ts[id], trace.ts[id] + d]);
        const kindName = KINDS[kind];
        kinds.set(kindName, (kinds.get(kindName) ?? 0) + d);
        const name = trace.names[id];
        const op = ops.get(name) ?? { name, kind: kindName, count: 0, total: 0 };
        op.count += 1;
        op.total += d;
        ops.set(name, op);
      }
    }
    out.push({
      device: lane.name,
      span: Number.isFinite(first) ? last - first : 0,
      busy: union(spans),
      wait: wait || waitEvents,
      kinds: [...kinds].sort((a, b) => b[1] - a[1]),
      ops: [...ops.values()].sort((a, b) => b.total - a.total).slice(0, 20),
    });
  });
  return out;
}

/** The length of a union of spans. */
function union(spans: [number, number][]): number {
  spans.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const [start, end] of spans) {
    if (start > to) {
      if (to > from) total += to - from;
      from = start;
      to = end;
    } else if (end > to) {
      to = end;
    }
  }
  if (to > from) total += to - from;
  return total;
}

/** Time per op kind over all devices, the largest first. */
export function kindTotals(rows: readonly DeviceSummary[]): [string, number][] {
  const totals = new Map<string, number>();
  for (const row of rows) for (const [kind, us] of row.kinds) totals.set(kind, (totals.get(kind) ?? 0) + us);
  return [...totals].sort((a, b) => b[1] - a[1]);
}

/** The ops that took the most time over all devices: each op's count and time summed. */
export function topOps(rows: readonly DeviceSummary[], n: number): (OpTotal & { devices: number })[] {
  const ops = new Map<string, OpTotal & { devices: number }>();
  for (const row of rows) {
    for (const op of row.ops) {
      const sum = ops.get(op.name) ?? { ...op, count: 0, total: 0, devices: 0 };
      sum.count += op.count;
      sum.total += op.total;
      sum.devices += 1;
      ops.set(op.name, sum);
    }
  }
  return [...ops.values()].sort((a, b) => b.total - a.total).slice(0, n);
}
