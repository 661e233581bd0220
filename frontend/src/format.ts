// Numbers as people read them, and safe reads of event fields (which come from code inside the
// sandbox: any field may be missing or of the wrong type).
import { el } from "./dom";
import { formatNumber } from "./i18n";

/** A finite number, or null. */
export function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A non-empty string, or null. */
export function str(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

function sig(value: number, digits = 3): string {
  if (value === 0) return "0";
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return value.toFixed(Math.min(decimals, 6));
}

/** A duration given in milliseconds, with three significant digits: 3.67 ms, 436 ms, 206 µs. */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs === 0) return "0 s";
  if (abs < 1e-3) return `${sig(ms * 1e6)} ns`;
  if (abs < 1) return `${sig(ms * 1e3)} µs`;
  if (abs < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

/** A byte count: 64.0 MB (decimal units, as XLA's cost analysis counts). */
export function bytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${sig(value)} ${units[unit]}`;
}

/** A count with an SI prefix: 48.0 M, 1.20 G. */
export function count(n: number): string {
  const units = ["", "k", "M", "G", "T", "P"];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? String(Math.round(value)) : `${sig(value)} ${units[unit]}`;
}

/** Floating-point operations: 570 FLOP, 48.0 MFLOP. */
export function flops(n: number): string {
  const c = count(n);
  return c.includes(" ") ? `${c}FLOP` : `${c} FLOP`;
}

/** A rate: 12.3 (three significant digits, no unit). */
export function rate(value: number): string {
  return Math.abs(value) >= 1000 ? formatNumber(Math.round(value)) : sig(value);
}

/** A speed-up: 13.6×, 0.16×. */
export function speedup(value: number): string {
  return `${value >= 100 ? Math.round(value) : sig(value, value < 1 ? 2 : 3)}×`;
}

/** A share of a peak, given as 0..1: 42 %. */
export function percent(share: number): string {
  const p = share * 100;
  return `${p < 10 ? p.toFixed(1) : Math.round(p)} %`;
}

/** Text with `code` in backticks shown as code and http(s) links made links: DOM nodes only,
 *  never markup, so text from a run stays text. */
export function richText(text: string): Node[] {
  const nodes: Node[] = [];
  for (const part of text.split(/(`[^`\n]+`|https?:\/\/[^\s<>()"']+[^\s<>()"'.,;:!?])/)) {
    if (!part) continue;
    if (part.startsWith("`") && part.endsWith("`") && part.length > 2) {
      nodes.push(el("code", null, part.slice(1, -1)));
    } else if (/^https?:\/\//.test(part)) {
      const link = el("a", null, part);
      link.href = part;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      nodes.push(link);
    } else {
      nodes.push(document.createTextNode(part));
    }
  }
  return nodes;
}
