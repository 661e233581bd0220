// The timeline itself: a trace drawn on one canvas, a lane per process with a row per thread and
// a level per depth of nesting, the lanes' names in a fixed gutter on the left (the host's lane
// folds to its rows' first levels when there is no room for all) and the time axis along the
// top. Zoom and pan as XProf and Perfetto do (W/S, A/D, the wheel, dragging); a click selects a
// slice, which the owner shows. A collective's wait for its peers is hatched.
//
// It stays smooth with hundreds of thousands of slices: each level is searched for the slices in
// view (trace.ts keeps them by start), slices narrower than a pixel share one block per pixel
// column (the colour of the kind that took most of it, as opaque as the column is busy), the
// rectangles of one colour are filled as one path, and a burst of wheel, drag and key events
// draws once per animation frame. The canvas's backing store follows devicePixelRatio. No DOM
// node per slice.
import { duration } from "../format";
import { el } from "../dom";
import { formatNumber, t } from "../i18n";
import {
  COLLECTIVE,
  KINDS,
  WAIT,
  argNumber,
  eventAt,
  firstReaching,
  kindLabel,
  neighbour,
  type Trace,
  type TraceLevel,
} from "./trace";

/** Heights and widths in CSS pixels. */
const ROW_H = 18;
const SLICE_H = 15;
const LANE_PAD = 3;
const AXIS_H = 24;
/** The lanes' names' width, and on a narrow canvas. */
const GUTTER = 176;
const NARROW_GUTTER = 116;
const MIN_LABEL_PX = 30;
/** The levels of each row a folded lane shows (the host's Python calls nest deep). */
const FOLDED_LEVELS = 2;
/** The narrowest view: 10 ns. */
const MIN_SPAN = 0.01;
const KEY_ZOOM = 0.75;
const KEY_PAN = 0.2;
/** How opaque a pixel column of narrow slices is, as it is a quarter, half, three quarters or
 *  wholly busy. */
const SHADES = [0.4, 0.6, 0.8, 1];
/** A pause longer than this between two frames ends a burst of them (a pan, a zoom). */
const BURST_GAP_MS = 400;

// The Chinese faces follow the Latin ones: the axis's words in Chinese find a face that has them.
const FAMILY = `system-ui, -apple-system, "Segoe UI", Roboto, "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC", sans-serif`;
const FONT = `11px ${FAMILY}`;
const FONT_BOLD = `600 ${FONT}`;

interface LevelBox {
  lane: number;
  row: number;
  depth: number;
  level: TraceLevel | null;
  /** Top, in content pixels (0 at the first lane's top). */
  y: number;
}

interface LaneBox {
  lane: number;
  y: number;
  height: number;
  /** Whether it has levels a fold hides: its name folds and unfolds it. */
  foldable: boolean;
}

interface Palette {
  kinds: string[];
  /** The text drawn on a slice of each kind: dark on light colours, light on dark ones. */
  ink: string[];
  text: string;
  muted: string;
  border: string;
  surface: string;
  gutter: string;
  stripe: string;
  grid: string;
  selection: string;
  hatch: CanvasPattern | null;
}

export interface TimelineStats {
  /** From the trace given (or its fetch's end) to its first frame on screen, ms. */
  firstDrawMs: number | null;
  /** The time each frame of the last burst (a pan, a zoom) took to draw, ms. */
  frames: number[];
  /** The time between those frames, ms. */
  intervals: number[];
  /** The view, µs after the trace's start. */
  view: { start: number; end: number };
}

export interface TimelineViewOptions {
  /** What the canvas shows, for screen readers ("Timeline of run A"). */
  label: string;
  /** The tallest the canvas grows before its lanes scroll (CSS px); by default most of the
   *  window's height. */
  maxHeight?: number;
  onSelect?(id: number | null): void;
  /** The person moved the view (zoom, pan): µs after the trace's start. */
  onView?(start: number, end: number): void;
}

export class TimelineView {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLElement;
  private readonly probe: HTMLElement;
  private trace: Trace | null = null;
  private boxes: LevelBox[] = [];
  private laneBoxes: LaneBox[] = [];
  private contentHeight = 0;
  /** What "fit" shows, µs: the trace's span, or a longer one shared with another view. */
  private extent = 1;
  private sharedExtent: number | null = null;
  private t0 = 0;
  private t1 = 1;
  private scrollY = 0;
  private width = 0;
  private height = 0;
  private selectedId: number | null = null;
  private pointer: { x: number; y: number } | null = null;
  private drag: { x: number; y: number; t0: number; t1: number; scroll: number; moved: boolean } | null = null;
  private frameRequest = 0;
  private palette: Palette | null = null;
  private readonly labelWidths = new Map<string, number>();
  private readonly rects: number[][] = KINDS.map(() => []);
  /** Pixel columns of slices narrower than a pixel, by kind and shade: x, y. */
  private readonly columns: number[][] = Array.from({ length: KINDS.length * SHADES.length }, () => []);
  private readonly columnKinds = new Float64Array(KINDS.length);
  private readonly hatches: number[] = [];
  private readonly labels: number[] = [];
  private firstMark: number | null = null;
  private firstDrawMs: number | null = null;
  private frames: number[] = [];
  private intervals: number[] = [];
  private lastFrameAt = -Infinity;
  private readonly maxHeight: number | undefined;
  private gutter = GUTTER;
  /** Lanes shown with only their rows' first levels. */
  private readonly folded = new Set<number>();

  constructor(private readonly options: TimelineViewOptions) {
    this.maxHeight = options.maxHeight;
    this.canvas = el("canvas", "tl-canvas");
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("role", "application");
    this.canvas.setAttribute("aria-roledescription", t("timeline"));
    this.ctx = this.canvas.getContext("2d", { alpha: false })!;
    this.tooltip = el("div", "tl-tooltip");
    this.tooltip.setAttribute("aria-hidden", "true");
    this.tooltip.hidden = true;
    this.probe = el("span", "tl-probe");
    this.probe.setAttribute("aria-hidden", "true");
    this.element = el("div", "tl-view", this.canvas, this.tooltip, this.probe);
    this.describe();

    new ResizeObserver(() => this.schedule()).observe(this.element);
    // The theme (the header's toggle, the system's, an embed's) changes the colours.
    new MutationObserver(() => this.restyle()).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => this.restyle());

    this.canvas.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener("pointerdown", (e) => this.onPointerDown(e));
    this.canvas.addEventListener("pointermove", (e) => this.onPointerMove(e));
    this.canvas.addEventListener("pointerup", (e) => this.onPointerUp(e));
    this.canvas.addEventListener("pointercancel", () => (this.drag = null));
    this.canvas.addEventListener("pointerleave", () => {
      this.pointer = null;
      this.tooltip.hidden = true;
    });
    this.canvas.addEventListener("keydown", (e) => this.handleKey(e));
  }

  /**
   * Shows `trace` (null: nothing), opening on the devices' work: the span from their first op to
   * their last, the host's lanes folded to their first levels. In a profiled run the host's
   * Python and XLA's compile come first and can take most of the trace (2.7 s of 3.2 s for the
   * gallery's shard_map example), which leaves the devices' steps a strip at the right edge;
   * 0 shows the whole trace, F the devices' steps again.
   */
  setTrace(trace: Trace | null): void {
    this.trace = trace;
    this.selectedId = null;
    this.scrollY = 0;
    this.labelWidths.clear();
    this.folded.clear();
    if (trace && trace.lanes.some((lane) => lane.device)) {
      trace.lanes.forEach((lane, i) => {
        if (!lane.device) this.folded.add(i);
      });
    }
    this.layout();
    this.extent = Math.max(this.sharedExtent ?? 0, this.ownSpan());
    if (!this.frameDevices(false)) this.fit(false);
    this.describe();
  }

  /** The devices' work, µs after the trace's start; null when no device did any. */
  deviceFrame(): { start: number; end: number } | null {
    const trace = this.trace;
    if (!trace || trace.deviceStart === null || trace.deviceEnd === null) return null;
    return { start: trace.deviceStart - trace.start, end: trace.deviceEnd - trace.start };
  }

  /** Shows the devices' work with a little room either side; false when there is none. When it
   *  is most of the trace anyway (over 60 %), the whole trace is shown. */
  frameDevices(byUser = true): boolean {
    const frame = this.deviceFrame();
    if (!frame) return false;
    const span = Math.max(frame.end - frame.start, MIN_SPAN);
    if (span > this.ownSpan() * 0.6) {
      this.fit(byUser);
      return true;
    }
    const pad = span * 0.03;
    this.moveTo(frame.start - pad, frame.end + pad, byUser);
    return true;
  }

  /** From now until the next frame on screen is the time to first draw. */
  markStart(at = performance.now()): void {
    this.firstMark = at;
    this.firstDrawMs = null;
  }

  /** "Fit" shows `extent` µs (null: the trace's own span): two views on one time scale. */
  shareExtent(extent: number | null): void {
    this.sharedExtent = extent;
    this.extent = Math.max(extent ?? 0, this.ownSpan());
  }

  /** The trace's own span, µs. */
  ownSpan(): number {
    return this.trace ? Math.max(this.trace.end - this.trace.start, MIN_SPAN) : 1;
  }

  /** The view, µs after the trace's start. */
  view(): { start: number; end: number } {
    return { start: this.t0, end: this.t1 };
  }

  /** Shows `start`..`end` (µs after the trace's start), within what may be shown. */
  setView(start: number, end: number): void {
    this.moveTo(start, end, false);
  }

  fit(byUser = true): void {
    this.extent = Math.max(this.sharedExtent ?? 0, this.ownSpan());
    this.moveTo(0, this.extent, byUser);
  }

  /** Zooms by `factor` (below 1: in) about the pointer, or the middle when it is elsewhere. */
  zoom(factor: number, atX?: number): void {
    const plot = this.plotWidth();
    if (plot <= 0) return;
    const x = atX ?? (this.pointer && this.pointer.x >= this.gutter ? this.pointer.x : this.gutter + plot / 2);
    const span = this.t1 - this.t0;
    const next = Math.min(Math.max(span * factor, MIN_SPAN), this.extent * 1.1);
    const at = this.t0 + ((x - this.gutter) / plot) * span;
    const start = at - (at - this.t0) * (next / span);
    this.moveTo(start, start + next, true);
  }

  /** Pans by `fraction` of the view's width (negative: to the left, earlier). */
  pan(fraction: number): void {
    const dt = (this.t1 - this.t0) * fraction;
    this.moveTo(this.t0 + dt, this.t1 + dt, true);
  }

  select(id: number | null, reveal = false): void {
    this.selectedId = id;
    if (id !== null && reveal && this.trace) this.reveal(id);
    this.options.onSelect?.(id);
    this.schedule();
  }

  get selected(): number | null {
    return this.selectedId;
  }

  stats(): TimelineStats {
    return { firstDrawMs: this.firstDrawMs, frames: [...this.frames], intervals: [...this.intervals], view: this.view() };
  }

  /**
   * Where on the page the widest slice in view that `match` accepts is (its middle, and its
   * visible left and right edges, in client coordinates), scrolling the lanes to it when it is
   * out of view; null when there is none. For tests: they click what a person would.
   */
  locate(match: (id: number) => boolean): { x: number; y: number; left: number; right: number; id: number } | null {
    const trace = this.trace;
    const plot = this.plotWidth();
    if (!trace || plot <= 0) return null;
    const scale = plot / (this.t1 - this.t0);
    const a = trace.start + this.t0;
    let best: { id: number; x0: number; x1: number; width: number } | null = null;
    for (let id = 0; id < trace.count; id++) {
      if (!match(id) || (trace.depth[id] >= FOLDED_LEVELS && this.folded.has(trace.lane[id]))) continue;
      const x0 = Math.max(this.gutter, this.gutter + (trace.ts[id] - a) * scale);
      const x1 = Math.min(this.width, this.gutter + (trace.ts[id] + trace.dur[id] - a) * scale);
      const width = x1 - x0;
      if (width > (best?.width ?? -1) && x1 > this.gutter && x0 < this.width) best = { id, x0, x1, width };
    }
    if (!best) return null;
    const box = this.boxOf(best.id)!;
    const view = this.height - AXIS_H;
    if (box.y < this.scrollY || box.y + ROW_H > this.scrollY + view) this.scrollTo(box.y - view / 2);
    const rect = this.canvas.getBoundingClientRect();
    return {
      x: rect.left + (best.x0 + best.x1) / 2,
      y: rect.top + AXIS_H + box.y - this.scrollY + ROW_H / 2,
      left: rect.left + best.x0,
      right: rect.left + best.x1,
      id: best.id,
    };
  }

  /** Draws in the next animation frame (once, however many ask before it). */
  schedule(): void {
    if (this.frameRequest) return;
    this.frameRequest = requestAnimationFrame(() => {
      this.frameRequest = 0;
      this.draw();
    });
  }

  focus(): void {
    this.canvas.focus();
  }

  // ---- The view -------------------------------------------------------------------------

  private moveTo(start: number, end: number, byUser: boolean): void {
    let span = Math.min(Math.max(end - start, MIN_SPAN), this.extent * 1.1);
    // A little room either side of the trace, no more: the view never gets lost in nothing.
    const margin = this.extent * 0.05;
    const low = -margin;
    const high = this.extent + margin;
    span = Math.min(span, high - low);
    let t0 = start;
    if (t0 < low) t0 = low;
    if (t0 + span > high) t0 = high - span;
    if (this.t0 === t0 && this.t1 === t0 + span) return;
    this.t0 = t0;
    this.t1 = t0 + span;
    this.schedule();
    if (byUser) this.options.onView?.(this.t0, this.t1);
  }

  private plotWidth(): number {
    return Math.max(0, this.width - this.gutter);
  }

  private maxScroll(): number {
    return Math.max(0, this.contentHeight - (this.height - AXIS_H));
  }

  private scrollTo(y: number): boolean {
    const next = Math.min(Math.max(0, y), this.maxScroll());
    if (next === this.scrollY) return false;
    this.scrollY = next;
    this.schedule();
    return true;
  }

  /** Brings an event into view: the view moves to it (and widens to hold it), the lanes scroll. */
  private reveal(id: number): void {
    const trace = this.trace!;
    const start = trace.ts[id] - trace.start;
    const end = start + trace.dur[id];
    const span = this.t1 - this.t0;
    if (end - start > span * 0.9) {
      const pad = (end - start) * 0.1 + MIN_SPAN;
      this.moveTo(start - pad, end + pad, true);
    } else if (start < this.t0 || end > this.t1) {
      const middle = (start + end) / 2;
      this.moveTo(middle - span / 2, middle + span / 2, true);
    }
    if (!this.boxOf(id) && this.folded.has(trace.lane[id])) this.toggleFold(trace.lane[id]);
    const box = this.boxOf(id);
    if (box) {
      const view = this.height - AXIS_H;
      if (box.y < this.scrollY) this.scrollTo(box.y - LANE_PAD);
      else if (box.y + ROW_H > this.scrollY + view) this.scrollTo(box.y + ROW_H - view + LANE_PAD);
    }
  }

  /** Where an event's level is drawn. */
  private boxOf(id: number): LevelBox | undefined {
    const trace = this.trace!;
    return this.boxes.find((b) => b.lane === trace.lane[id] && b.row === trace.row[id] && b.depth === trace.depth[id]);
  }

  // ---- Layout and colours -----------------------------------------------------------------

  private layout(): void {
    this.boxes = [];
    this.laneBoxes = [];
    let y = 0;
    const trace = this.trace;
    if (trace) {
      trace.lanes.forEach((lane, li) => {
        const top = y;
        y += LANE_PAD;
        if (lane.rows.length === 0) {
          this.boxes.push({ lane: li, row: 0, depth: 0, level: null, y });
          y += ROW_H;
        }
        const folded = this.folded.has(li);
        lane.rows.forEach((row, ri) => {
          const levels = Math.max(1, folded ? Math.min(row.levels.length, FOLDED_LEVELS) : row.levels.length);
          for (let d = 0; d < levels; d++) {
            this.boxes.push({ lane: li, row: ri, depth: d, level: row.levels[d] ?? null, y });
            y += ROW_H;
          }
        });
        y += LANE_PAD;
        const foldable = lane.rows.some((row) => row.levels.length > FOLDED_LEVELS);
        this.laneBoxes.push({ lane: li, y: top, height: y - top, foldable });
      });
    }
    this.contentHeight = y;
    this.element.style.height = `${Math.min(AXIS_H + Math.max(y, ROW_H * 2), this.tallest())}px`;
  }

  /** The tallest the canvas grows. */
  private tallest(): number {
    return this.maxHeight ?? Math.max(360, Math.round(window.innerHeight * 0.7));
  }

  /** Folds or unfolds a lane (null: the host's, all of them), keeping the lanes above in place. */
  private toggleFold(lane: number | null): void {
    const trace = this.trace;
    if (!trace) return;
    const lanes = lane === null ? trace.lanes.map((l, i) => (l.device ? -1 : i)).filter((i) => i >= 0) : [lane];
    const fold = !lanes.every((i) => this.folded.has(i));
    for (const i of lanes) {
      if (fold) this.folded.add(i);
      else this.folded.delete(i);
    }
    this.layout();
    this.scrollY = Math.min(this.scrollY, this.maxScroll());
    this.schedule();
  }

  private describe(): void {
    const lanes = this.trace?.lanes.length ?? 0;
    const what = lanes
      ? t("{label}, {n} lanes", { label: this.options.label, n: formatNumber(lanes) })
      : this.options.label;
    this.canvas.setAttribute(
      "aria-label",
      t("{what}. W and S zoom in and out, A and D pan left and right, 0 shows the whole trace, F the devices' steps, E folds or unfolds the host's lane; the left and right arrows step through the slices of the selected one's row.", { what }),
    );
  }

  private restyle(): void {
    this.palette = null;
    this.schedule();
  }

  /** The colours, from the stylesheet's variables as the page's theme resolves them. */
  private colours(): Palette {
    if (this.palette) return this.palette;
    const resolve = (variable: string) => {
      this.probe.style.color = `var(${variable})`;
      return getComputedStyle(this.probe).color;
    };
    const kinds = KINDS.map((k) => resolve(`--tl-${k}`));
    const dark = resolve("--tl-ink-dark");
    const light = resolve("--tl-ink-light");
    const palette: Palette = {
      kinds,
      // Whichever of the two contrasts more with the slice's colour.
      ink: kinds.map((c) => (luminance(c) > 0.179 ? dark : light)),
      text: resolve("--text"),
      muted: resolve("--text-muted"),
      border: resolve("--border"),
      surface: resolve("--surface"),
      gutter: resolve("--surface-2"),
      stripe: resolve("--tl-stripe"),
      grid: resolve("--tl-grid"),
      selection: resolve("--tl-selection"),
      hatch: null,
    };
    palette.hatch = this.hatchPattern(resolve("--tl-hatch"));
    this.palette = palette;
    return palette;
  }

  /** Diagonal stripes, drawn over a collective's wait. */
  private hatchPattern(colour: string): CanvasPattern | null {
    const dpr = window.devicePixelRatio || 1;
    const size = Math.round(6 * dpr);
    const tile = document.createElement("canvas");
    tile.width = tile.height = size;
    const g = tile.getContext("2d");
    if (!g) return null;
    g.strokeStyle = colour;
    g.lineWidth = 1.6 * dpr;
    g.beginPath();
    for (const offset of [-size, 0, size]) {
      g.moveTo(offset, size);
      g.lineTo(offset + size, 0);
    }
    g.stroke();
    const pattern = this.ctx.createPattern(tile, "repeat");
    pattern?.setTransform(new DOMMatrix().scale(1 / dpr));
    return pattern;
  }

  // ---- Drawing ----------------------------------------------------------------------------

  private draw(): void {
    const began = performance.now();
    const width = this.element.clientWidth;
    const height = this.element.clientHeight;
    if (width === 0 || height === 0) return; // hidden: drawn when shown (the ResizeObserver)
    const dpr = window.devicePixelRatio || 1;
    if (this.width !== width || this.height !== height || this.canvas.width !== Math.round(width * dpr)) {
      this.width = width;
      this.height = height;
      this.gutter = width < 560 ? NARROW_GUTTER : GUTTER;
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
      this.scrollY = Math.min(this.scrollY, this.maxScroll());
      if (this.palette?.hatch) this.palette = null; // the hatch is drawn for the pixel ratio
    }
    const ctx = this.ctx;
    const p = this.colours();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = p.surface;
    ctx.fillRect(0, 0, width, height);
    const trace = this.trace;
    if (trace) {
      this.drawLanes(trace, p);
      this.drawGutter(trace, p);
    }
    this.drawAxis(p);

    const now = performance.now();
    if (this.firstMark !== null && trace) {
      this.firstDrawMs = now - this.firstMark;
      this.firstMark = null;
    }
    if (began - this.lastFrameAt > BURST_GAP_MS) {
      this.frames = [];
      this.intervals = [];
    } else {
      this.intervals.push(began - this.lastFrameAt);
    }
    this.frames.push(now - began);
    if (this.frames.length > 2000) {
      this.frames.shift();
      this.intervals.shift();
    }
    this.lastFrameAt = began;
  }

  private drawLanes(trace: Trace, p: Palette): void {
    const ctx = this.ctx;
    const width = this.width;
    const height = this.height;
    const plot = this.plotWidth();
    const span = this.t1 - this.t0;
    const scale = plot / span; // px per µs
    const a = trace.start + this.t0;
    const b = trace.start + this.t1;
    const top = AXIS_H - this.scrollY;

    ctx.save();
    ctx.beginPath();
    ctx.rect(this.gutter, AXIS_H, plot, height - AXIS_H);
    ctx.clip();

    // Every other lane a shade apart; the grid of the axis's ticks.
    this.laneBoxes.forEach((box, i) => {
      if (i % 2 === 1) {
        ctx.fillStyle = p.stripe;
        ctx.fillRect(this.gutter, top + box.y, plot, box.height);
      }
    });
    ctx.strokeStyle = p.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const [tick] of this.ticks()) {
      const x = Math.round(this.gutter + (tick - this.t0) * scale) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, height);
    }
    ctx.stroke();

    for (const list of this.rects) list.length = 0;
    for (const list of this.columns) list.length = 0;
    this.hatches.length = 0;
    this.labels.length = 0;

    for (const box of this.boxes) {
      const y = top + box.y;
      if (y + ROW_H < AXIS_H || y > height || !box.level) continue;
      const level = box.level;
      const n = level.ids.length;
      const sy = y + (ROW_H - SLICE_H) / 2;
      // Slices narrower than a pixel make one block per pixel column: the colour of the kind
      // that took most of its time, as opaque as the column is full (a column a tenth busy is
      // not drawn as a busy one).
      let column = -1;
      let columnBusy = 0;
      const byKind = this.columnKinds;
      const flush = () => {
        if (column < 0) return;
        // A wait lies in an op: the column is the op's colour unless it holds nothing but waits.
        let kind = WAIT;
        for (let k = 0; k < byKind.length; k++) if (k !== WAIT && byKind[k] > 0 && (kind === WAIT || byKind[k] > byKind[kind])) kind = k;
        byKind.fill(0);
        const share = Math.min(1, columnBusy * scale);
        this.columns[kind * SHADES.length + (share >= 0.75 ? 3 : share >= 0.5 ? 2 : share >= 0.25 ? 1 : 0)].push(column, sy);
        column = -1;
      };
      for (let i = firstReaching(level, a); i < n; i++) {
        const start = level.starts[i];
        if (start > b) break;
        const id = level.ids[i];
        const d = trace.dur[id];
        const kind = trace.kind[id];
        let x0 = this.gutter + (start - a) * scale;
        let x1 = x0 + d * scale;
        if (x1 - x0 < 1) {
          const px = Math.floor(x0);
          if (px !== column) {
            flush();
            column = px;
            columnBusy = 0;
          }
          // A wait lies in its collective: counted once, as the collective's.
          if (kind !== WAIT) columnBusy += d;
          byKind[kind] += d;
          continue;
        }
        flush();
        x0 = Math.max(x0, this.gutter - 2);
        x1 = Math.min(x1, width + 2);
        const w = x1 - x0;
        // A hairline between neighbours that touch.
        this.rects[kind].push(x0, sy, w > 3 ? w - 1 : w, SLICE_H);
        if (kind === WAIT) {
          this.hatches.push(x0, sy, w, SLICE_H);
        } else if (kind === COLLECTIVE && !trace.waited[id]) {
          // The wait a collective spent before its peers were there: its leading part.
          const wait = argNumber(trace, id, "wait_us");
          if (wait !== null && wait > 0) {
            const ws = this.gutter + (start - a) * scale;
            const we = Math.min(ws + wait * scale, x1);
            if (we - Math.max(ws, x0) >= 1) this.hatches.push(Math.max(ws, x0), sy, we - Math.max(ws, x0), SLICE_H);
          }
        }
        // A wait's name would be written over its collective's; a collective's goes after its
        // wait, where the hatch does not cross it.
        if (w >= MIN_LABEL_PX && kind !== WAIT) {
          const wait = kind === COLLECTIVE ? argNumber(trace, id, "wait_us") : null;
          const from = wait !== null && wait > 0 ? Math.max(x0, this.gutter + (start - a + wait) * scale) : x0;
          if (x1 - from >= MIN_LABEL_PX) this.labels.push(id, from, sy, x1 - from);
        }
      }
      flush();
    }

    this.columns.forEach((list, i) => {
      if (!list.length) return;
      ctx.globalAlpha = SHADES[i % SHADES.length];
      ctx.fillStyle = p.kinds[Math.floor(i / SHADES.length)];
      ctx.beginPath();
      for (let j = 0; j < list.length; j += 2) ctx.rect(list[j], list[j + 1], 1, SLICE_H);
      ctx.fill();
    });
    ctx.globalAlpha = 1;
    // By kind, in KINDS' order: a wait is drawn over the collective it lies in.
    this.rects.forEach((list, kind) => {
      if (!list.length) return;
      ctx.fillStyle = p.kinds[kind];
      ctx.beginPath();
      for (let i = 0; i < list.length; i += 4) ctx.rect(list[i], list[i + 1], list[i + 2], list[i + 3]);
      ctx.fill();
    });
    if (this.hatches.length && p.hatch) {
      ctx.fillStyle = p.hatch;
      ctx.beginPath();
      for (let i = 0; i < this.hatches.length; i += 4) ctx.rect(this.hatches[i], this.hatches[i + 1], this.hatches[i + 2], this.hatches[i + 3]);
      ctx.fill();
    }

    // Names on the slices wide enough, from the view's left edge when a slice begins before it.
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    for (let i = 0; i < this.labels.length; i += 4) {
      const id = this.labels[i];
      const x0 = Math.max(this.labels[i + 1], this.gutter);
      const w = this.labels[i + 1] + this.labels[i + 3] - x0;
      const text = this.clipText(trace.names[id], w - 8);
      if (!text) continue;
      ctx.fillStyle = p.ink[trace.kind[id]];
      ctx.fillText(text, x0 + 4, this.labels[i + 2] + SLICE_H / 2 + 0.5);
    }

    // Before the devices' first op and after their last, the host worked alone (Python, XLA's
    // compile): washed out, so that the devices' steps stand out when the whole trace is shown.
    const frame = this.deviceFrame();
    if (frame) {
      const left = this.gutter + (frame.start - this.t0) * scale;
      const right = this.gutter + (frame.end - this.t0) * scale;
      ctx.globalAlpha = 0.55;
      ctx.fillStyle = p.surface;
      if (left > this.gutter) ctx.fillRect(this.gutter, AXIS_H, left - this.gutter, height - AXIS_H);
      if (right < width) ctx.fillRect(Math.max(right, this.gutter), AXIS_H, width - Math.max(right, this.gutter), height - AXIS_H);
      ctx.globalAlpha = 1;
    }

    const selected = this.selectedId;
    const box = selected === null ? undefined : this.boxOf(selected);
    if (selected !== null && box) {
      // However narrow, the selected slice is outlined where it is.
      const x0 = Math.max(this.gutter - 4, this.gutter + (trace.ts[selected] - a) * scale);
      const x1 = Math.min(width + 4, Math.max(this.gutter + (trace.ts[selected] + trace.dur[selected] - a) * scale, x0 + 1));
      const y = top + box.y + (ROW_H - SLICE_H) / 2;
      ctx.strokeStyle = p.selection;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, y - 1, x1 - x0 + 2, SLICE_H + 2);
    }
    ctx.restore();
  }

  private drawGutter(trace: Trace, p: Palette): void {
    const ctx = this.ctx;
    const top = AXIS_H - this.scrollY;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, this.width, this.height - AXIS_H);
    ctx.clip();
    ctx.fillStyle = p.gutter;
    ctx.fillRect(0, AXIS_H, this.gutter, this.height - AXIS_H);
    ctx.textBaseline = "middle";
    ctx.strokeStyle = p.border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const box of this.laneBoxes) {
      const y = Math.round(top + box.y + box.height) + 0.5;
      ctx.moveTo(0, y);
      ctx.lineTo(this.width, y);
    }
    ctx.moveTo(this.gutter + 0.5, AXIS_H);
    ctx.lineTo(this.gutter + 0.5, this.height);
    ctx.stroke();
    for (const box of this.laneBoxes) {
      const y0 = top + box.y;
      if (y0 + box.height < AXIS_H || y0 > this.height) continue;
      const lane = trace.lanes[box.lane];
      // The lane's name on its first row; each thread's on its first level, on the right (the
      // first row's where the lane's name leaves room for it).
      const first = this.boxes.find((b) => b.lane === box.lane)!;
      const x = box.foldable ? 4 : 10;
      ctx.textAlign = "left";
      ctx.font = FONT_BOLD;
      ctx.fillStyle = p.text;
      const name = this.clipText(box.foldable ? `${this.folded.has(box.lane) ? "▸" : "▾"} ${lane.name}` : lane.name, this.gutter - 8 - x, true);
      ctx.fillText(name, x, top + first.y + ROW_H / 2 + 0.5);
      const nameEnd = x + this.ctx.measureText(name).width + 10;
      ctx.font = FONT;
      ctx.fillStyle = p.muted;
      ctx.textAlign = "right";
      lane.rows.forEach((row, ri) => {
        const b = this.boxes.find((x) => x.lane === box.lane && x.row === ri && x.depth === 0);
        if (!b) return;
        const room = b === first ? this.gutter - 8 - nameEnd : Math.min(96, this.gutter - 16);
        const text = this.clipText(row.name, room);
        if (text) ctx.fillText(text, this.gutter - 8, top + b.y + ROW_H / 2 + 0.5);
      });
    }
    ctx.restore();
  }

  private drawAxis(p: Palette): void {
    const ctx = this.ctx;
    const plot = this.plotWidth();
    ctx.fillStyle = p.gutter;
    ctx.fillRect(0, 0, this.width, AXIS_H);
    ctx.strokeStyle = p.border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(this.width, AXIS_H - 0.5);
    ctx.moveTo(this.gutter + 0.5, 0);
    ctx.lineTo(this.gutter + 0.5, AXIS_H);
    ctx.stroke();
    if (!this.trace || plot <= 0) return;
    const scale = plot / (this.t1 - this.t0);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    ctx.fillStyle = p.muted;
    ctx.textAlign = "left";
    ctx.fillText(t("{span} shown", { span: duration((this.t1 - this.t0) / 1000) }), 10, AXIS_H / 2);
    ctx.save();
    ctx.beginPath();
    ctx.rect(this.gutter + 1, 0, plot, AXIS_H);
    ctx.clip();
    ctx.strokeStyle = p.muted;
    ctx.beginPath();
    for (const [tick, label] of this.ticks()) {
      const x = Math.round(this.gutter + (tick - this.t0) * scale) + 0.5;
      ctx.moveTo(x, AXIS_H - 6);
      ctx.lineTo(x, AXIS_H);
      // A label that would be cut at the right edge is left out: its tick says where it is.
      if (x + 4 + this.measure(label) <= this.width - 2) ctx.fillText(label, x + 4, AXIS_H / 2 - 1);
    }
    ctx.stroke();
    ctx.restore();
  }

  /** The axis's ticks in view: µs after the trace's start, and their labels (µs, ms or s). */
  private ticks(): [number, string][] {
    const plot = this.plotWidth();
    if (plot <= 0) return [];
    const span = this.t1 - this.t0;
    const target = (span * 96) / plot;
    const power = 10 ** Math.floor(Math.log10(target));
    const step = ([1, 2, 5, 10].find((m) => m * power >= target) ?? 10) * power;
    const [unit, factor] = step >= 1e6 ? ["s", 1e6] : step >= 1e3 ? ["ms", 1e3] : step >= 1 ? ["µs", 1] : ["ns", 1e-3];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / factor) - 1e-9));
    const out: [number, string][] = [];
    for (let tick = Math.ceil(this.t0 / step) * step; tick <= this.t1 && out.length < 200; tick += step) {
      const value = tick / factor;
      out.push([tick, `${Math.abs(value) < 1e-9 ? "0" : value.toFixed(decimals)} ${unit}`]);
    }
    return out;
  }

  private measure(text: string): number {
    let w = this.labelWidths.get(text);
    if (w === undefined) {
      w = this.ctx.measureText(text).width;
      if (this.labelWidths.size > 50_000) this.labelWidths.clear();
      this.labelWidths.set(text, w);
    }
    return w;
  }

  /** `text` cut with an ellipsis to fit `room` px in the current font ("" when nothing fits). */
  private clipText(text: string, room: number, bold = false): string {
    if (room < 12) return "";
    const key = bold ? `\u0001${text}` : text;
    const full = this.labelWidths.get(key) ?? this.ctx.measureText(text).width;
    this.labelWidths.set(key, full);
    if (full <= room) return text;
    let chars = Math.floor((text.length * room) / full) - 1;
    while (chars > 0) {
      const cut = `${text.slice(0, chars)}…`;
      if (this.ctx.measureText(cut).width <= room) return cut;
      chars -= 1;
    }
    return "";
  }

  // ---- Input ------------------------------------------------------------------------------

  private local(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private onWheel(e: WheelEvent): void {
    if (!this.trace) return;
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.height : 1;
    const dx = e.deltaX * unit;
    const dy = e.deltaY * unit;
    const { x } = this.local(e);
    if (e.ctrlKey || e.metaKey) {
      // A pinch on a trackpad comes as a wheel with Ctrl held.
      e.preventDefault();
      this.zoom(Math.exp(Math.max(-1, Math.min(1, dy * 0.0025))), Math.max(x, this.gutter));
    } else if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      e.preventDefault();
      const px = e.shiftKey ? dy || dx : dx;
      this.pan(px / Math.max(1, this.plotWidth()));
    } else if (this.scrollTo(this.scrollY + dy)) {
      // The lanes scroll; at their end the wheel scrolls the page.
      e.preventDefault();
    }
  }

  private onPointerDown(e: PointerEvent): void {
    if (e.button !== 0 || !this.trace) return;
    const { x, y } = this.local(e);
    this.drag = { x, y, t0: this.t0, t1: this.t1, scroll: this.scrollY, moved: false };
    this.canvas.setPointerCapture(e.pointerId);
    this.tooltip.hidden = true;
  }

  private onPointerMove(e: PointerEvent): void {
    const point = this.local(e);
    this.pointer = point;
    const drag = this.drag;
    if (drag) {
      const dx = point.x - drag.x;
      const dy = point.y - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < 4) return;
      drag.moved = true;
      this.canvas.dataset.dragging = "true";
      const dt = (-dx / Math.max(1, this.plotWidth())) * (drag.t1 - drag.t0);
      this.moveTo(drag.t0 + dt, drag.t1 + dt, true);
      this.scrollTo(drag.scroll - dy);
      return;
    }
    this.hover(point);
  }

  private onPointerUp(e: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    delete this.canvas.dataset.dragging;
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    if (drag && !drag.moved) {
      const { x, y } = this.local(e);
      const lane = x < this.gutter && y >= AXIS_H ? this.laneAt(y) : null;
      if (lane !== null) {
        if (lane.foldable) this.toggleFold(lane.lane);
      } else {
        this.select(this.hit(x, y));
      }
    }
  }

  /** Acts on a key (W/S/A/D, 0, F, E, the arrows, Escape) pressed on the canvas, or passed on by
   *  the pane while nothing else on the page has the keyboard; whether it did. */
  handleKey(e: KeyboardEvent): boolean {
    if (e.ctrlKey || e.metaKey || e.altKey || !this.trace) return false;
    switch (e.key) {
      case "w":
      case "W":
      case "+":
      case "=":
        this.zoom(KEY_ZOOM);
        break;
      case "s":
      case "S":
      case "-":
      case "_":
        this.zoom(1 / KEY_ZOOM);
        break;
      case "a":
      case "A":
        this.pan(-KEY_PAN);
        break;
      case "d":
      case "D":
        this.pan(KEY_PAN);
        break;
      case "0":
      case "Home":
        this.fit();
        break;
      case "f":
      case "F":
        if (!this.frameDevices()) return false;
        break;
      case "e":
      case "E":
        if (!this.laneBoxes.some((b) => b.foldable && !this.trace!.lanes[b.lane].device)) return false;
        this.toggleFold(null);
        break;
      case "ArrowLeft":
      case "ArrowRight": {
        if (this.selectedId === null) return false;
        const next = neighbour(this.trace, this.selectedId, e.key === "ArrowLeft" ? -1 : 1);
        if (next !== null) this.select(next, true);
        break;
      }
      case "ArrowUp":
      case "ArrowDown":
        if (!this.scrollTo(this.scrollY + (e.key === "ArrowUp" ? -1 : 1) * ROW_H * 2)) return false;
        break;
      case "Escape":
        if (this.selectedId === null) return false;
        this.select(null);
        break;
      default:
        return false;
    }
    e.preventDefault();
    return true;
  }

  /** The lane at a height of the canvas. */
  private laneAt(y: number): LaneBox | null {
    const contentY = y - AXIS_H + this.scrollY;
    return this.laneBoxes.find((b) => contentY >= b.y && contentY < b.y + b.height) ?? null;
  }

  /** The slice at a point of the canvas, or the nearest within 3 px of it on its level. */
  private hit(x: number, y: number): number | null {
    const trace = this.trace;
    if (!trace || x < this.gutter || y < AXIS_H) return null;
    const contentY = y - AXIS_H + this.scrollY;
    const box = this.boxes.find((b) => contentY >= b.y && contentY < b.y + ROW_H);
    if (!box?.level) return null;
    const scale = this.plotWidth() / (this.t1 - this.t0);
    const at = trace.start + this.t0 + (x - this.gutter) / scale;
    return eventAt(trace, box.level, at, 3 / scale);
  }

  private hover(point: { x: number; y: number }): void {
    const trace = this.trace;
    const id = trace ? this.hit(point.x, point.y) : null;
    this.canvas.style.cursor = id !== null ? "pointer" : point.x >= this.gutter ? "grab" : "";
    if (id === null || !trace) {
      this.tooltip.hidden = true;
      return;
    }
    this.tooltip.replaceChildren(
      el("span", "tl-tooltip-name", trace.names[id] || t("(unnamed)")),
      el("span", "tl-tooltip-sub", `${kindLabel(KINDS[trace.kind[id]])} · ${duration(trace.dur[id] / 1000)}`),
    );
    this.tooltip.hidden = false;
    const room = this.width - point.x;
    const tipWidth = this.tooltip.offsetWidth;
    this.tooltip.style.left = `${room < tipWidth + 24 ? point.x - tipWidth - 12 : point.x + 14}px`;
    this.tooltip.style.top = `${point.y + 16}px`;
  }
}

/** Relative luminance (0 black .. 1 white) of a CSS rgb() colour. */
function luminance(colour: string): number {
  const m = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/.exec(colour);
  if (!m) return 1;
  const [r, g, b] = m.slice(1, 4).map((v) => {
    const c = Number(v) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
