// What a comparison's page puts side by side, from the two runs' events: each compiled function
// of A matched with B's of the same name (the nth compilation of `f` with the nth), and each
// measurement matched by its label, with how much faster or slower B is. Pure: no DOM.
import type { CompiledEvent, ProfileEvent, RunEvent } from "../events";
import { num, str } from "../format";
import { t } from "../i18n";
import { kindTotals, type DeviceSummary } from "../profile/summary";

export type SideName = "A" | "B";
export const SIDE_NAMES: readonly SideName[] = ["A", "B"];

export type TextKind = "jaxpr" | "stablehlo" | "hlo";
export const TEXT_KINDS: readonly TextKind[] = ["jaxpr", "stablehlo", "hlo"];

/** One compiled function, on either side or both. */
export interface FunctionPair {
  /** "f", or "f #2" for its second compilation. */
  label: string;
  a: CompiledEvent | null;
  b: CompiledEvent | null;
}

/** How a pair's texts of one kind compare: the same, different, or absent on a side. */
export function textsAgree(pair: FunctionPair, kind: TextKind): "same" | "differs" | "one-side" {
  const a = str(pair.a?.[kind]);
  const b = str(pair.b?.[kind]);
  if (a === null || b === null) return "one-side";
  return normalise(a, kind) === normalise(b, kind) ? "same" : "differs";
}

/** Text as compared: trailing spaces, and an HLO module's own name and ids, say nothing of what
 *  it computes. */
function normalise(text: string, kind: TextKind): string {
  let out = text.replace(/[ \t]+$/gm, "").trim();
  if (kind !== "jaxpr") out = out.replace(/^(HloModule|module) @?[\w.-]+/m, "$1");
  return out;
}

/** Keys each compiled event by its function's name and how many of that name came before. */
function labelled(events: readonly CompiledEvent[]): Map<string, CompiledEvent> {
  const seen = new Map<string, number>();
  const out = new Map<string, CompiledEvent>();
  for (const event of events) {
    const name = str(event.name) ?? "function";
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    out.set(n === 1 ? name : `${name} #${n}`, event);
  }
  return out;
}

/** A's functions in A's order, then those only B compiled, in B's. */
export function pairFunctions(a: readonly CompiledEvent[], b: readonly CompiledEvent[]): FunctionPair[] {
  const left = labelled(a);
  const right = labelled(b);
  const pairs: FunctionPair[] = [];
  for (const [label, event] of left) pairs.push({ label, a: event, b: right.get(label) ?? null });
  for (const [label, event] of right) if (!left.has(label)) pairs.push({ label, a: null, b: event });
  return pairs;
}

/** One row of the Timing table: what was measured and its time on each side, in ms. */
export interface TimingPair {
  label: string;
  /** Where it comes from: "run" (wall time), "compile", or the measurement's kind. */
  kind: string;
  a: number | null;
  b: number | null;
}

/** The measurements of one run, by label: the run's wall time, each compilation's compile time,
 *  each %timeit / %time / bench (its median, else its mean, else its wall time) and each row of
 *  a jaxplay.compare table. */
export function measurements(events: readonly RunEvent[]): Map<string, { kind: string; ms: number }> {
  const out = new Map<string, { kind: string; ms: number }>();
  const add = (label: string, kind: string, ms: number | null) => {
    if (ms === null || !Number.isFinite(ms)) return;
    let key = label;
    for (let n = 2; out.has(key); n++) key = `${label} #${n}`;
    out.set(key, { kind, ms });
  };
  const compiled = labelled(events.filter((e): e is CompiledEvent => e.type === "compiled"));
  for (const [label, event] of compiled) add(t("compile {function}", { function: label }), "compile", num(event.compile_ms));
  for (const event of events) {
    if (event.type === "timing") {
      const data = event as unknown as Record<string, unknown>;
      const kind = str(data.kind) ?? "single";
      if (kind === "comparison" && Array.isArray(data.rows)) {
        const title = str(data.label) ?? str(data.baseline) ?? t("compare");
        for (const row of data.rows as Record<string, unknown>[]) {
          if (row && typeof row === "object") add(`${title}: ${str(row.label) ?? "?"}`, "compare", typical(row));
        }
      } else {
        const label = str(data.label) ?? str(data.text) ?? t("{kind} on line {line}", { kind, line: num(data.line) ?? "?" });
        add(label, kind, typical(data));
      }
    } else if (event.type === "finished") {
      add(t("whole run (wall)"), "run", num(event.wall_ms));
    }
  }
  return out;
}

function typical(data: Record<string, unknown>): number | null {
  return num(data.median_ms) ?? num(data.mean_ms) ?? num(data.wall_ms);
}

/** The two runs' measurements side by side: A's in A's order, then those only B has. The
 *  whole run's wall time comes last. */
export function pairTimings(a: readonly RunEvent[], b: readonly RunEvent[]): TimingPair[] {
  const left = measurements(a);
  const right = measurements(b);
  const rows: TimingPair[] = [];
  for (const [label, m] of left) rows.push({ label, kind: m.kind, a: m.ms, b: right.get(label)?.ms ?? null });
  for (const [label, m] of right) if (!left.has(label)) rows.push({ label, kind: m.kind, a: null, b: m.ms });
  const wall = rows.findIndex((r) => r.kind === "run");
  if (wall >= 0) rows.push(...rows.splice(wall, 1));
  return rows;
}

/** "B 2.1× faster", "B 1.3× slower", "about the same" (within 5 %), or "" (a side missing). */
export function verdict(a: number | null, b: number | null): string {
  if (a === null || b === null || a <= 0 || b <= 0) return "";
  const ratio = a / b;
  if (Math.abs(ratio - 1) < 0.05) return t("about the same");
  return ratio > 1
    ? t("B {ratio}× faster", { ratio: ratio.toFixed(ratio >= 10 ? 0 : 1) })
    : t("B {ratio}× slower", { ratio: (1 / ratio).toFixed(1 / ratio >= 10 ? 0 : 1) });
}

/** The stdout of a run, joined (for "the same output" on the Output tab). */
export function stdoutOf(events: readonly RunEvent[]): string {
  return events.filter((e) => e.type === "stdout").map((e) => str((e as { text?: unknown }).text) ?? "").join("");
}

/** The run's profile event, when it was profiled. */
export function profileOf(events: readonly RunEvent[]): ProfileEvent | null {
  return (events.find((e) => e.type === "profile") as ProfileEvent | undefined) ?? null;
}

/** One row of the Timeline tab's table: the time of one kind of op on A and on B (µs, all
 *  devices together), or a total. */
export interface KindPair {
  kind: string;
  a: number | null;
  b: number | null;
}

/** A's kinds by A's time, then those only B has; then busy and collective wait, all devices. */
export function pairKinds(a: readonly DeviceSummary[], b: readonly DeviceSummary[]): KindPair[] {
  const left = new Map(kindTotals(a));
  const right = new Map(kindTotals(b));
  const rows: KindPair[] = [];
  for (const [kind, us] of left) rows.push({ kind, a: us, b: right.get(kind) ?? null });
  for (const [kind, us] of right) if (!left.has(kind)) rows.push({ kind, a: null, b: us });
  const sum = (list: readonly DeviceSummary[], f: (r: DeviceSummary) => number) =>
    list.length ? list.reduce((n, r) => n + f(r), 0) : null;
  rows.push({ kind: "busy, all devices", a: sum(a, (r) => r.busy), b: sum(b, (r) => r.busy) });
  rows.push({ kind: "collective wait", a: sum(a, (r) => r.wait), b: sum(b, (r) => r.wait) });
  return rows;
}

/** B's time over A's: "1.32×", or "" where a side has none. */
export function ratio(a: number | null, b: number | null): string {
  if (a === null || b === null || a <= 0) return "";
  const r = b / a;
  return `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}×`;
}
