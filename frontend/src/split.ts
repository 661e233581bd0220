// The draggable divider between the editor and the results. Wide windows only: below the
// breakpoint in workbench.css the panes stack and the divider is hidden.
import { KEYS, local } from "./storage";

const MIN_FRACTION = 0.25;
const MAX_FRACTION = 0.75;

export function bindSplitter(workspace: HTMLElement, splitter: HTMLElement): void {
  const apply = (fraction: number) => {
    const f = Math.min(MAX_FRACTION, Math.max(MIN_FRACTION, fraction));
    workspace.style.setProperty("--editor-fraction", String(f));
    splitter.setAttribute("aria-valuenow", String(Math.round(f * 100)));
    return f;
  };
  const saved = Number(local.get(KEYS.split));
  let fraction = apply(Number.isFinite(saved) && saved > 0 ? saved : 0.55);

  splitter.addEventListener("pointerdown", (down) => {
    if (down.button !== 0) return;
    down.preventDefault();
    splitter.setPointerCapture(down.pointerId);
    workspace.classList.add("resizing");
    const rect = workspace.getBoundingClientRect();
    const move = (e: PointerEvent) => {
      fraction = apply((e.clientX - rect.left) / rect.width);
    };
    const up = () => {
      splitter.removeEventListener("pointermove", move);
      splitter.removeEventListener("pointerup", up);
      splitter.removeEventListener("pointercancel", up);
      workspace.classList.remove("resizing");
      local.set(KEYS.split, fraction.toFixed(3));
    };
    splitter.addEventListener("pointermove", move);
    splitter.addEventListener("pointerup", up);
    splitter.addEventListener("pointercancel", up);
  });
  splitter.addEventListener("dblclick", () => {
    fraction = apply(0.55);
    local.set(KEYS.split, null);
  });
  splitter.addEventListener("keydown", (e) => {
    const step = e.key === "ArrowLeft" ? -0.02 : e.key === "ArrowRight" ? 0.02 : 0;
    if (!step) return;
    e.preventDefault();
    fraction = apply(fraction + step);
    local.set(KEYS.split, fraction.toFixed(3));
  });
}
