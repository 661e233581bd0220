// A menu that drops from a header button: the browser's popover (light dismiss, Escape, top
// layer), placed under its button.

export function bindPopover(
  button: HTMLButtonElement,
  panel: HTMLElement,
  onOpen?: () => void,
): { close(): void } {
  panel.popover = "auto";
  button.popoverTargetElement = panel;
  button.setAttribute("aria-haspopup", "true");
  panel.addEventListener("beforetoggle", (event) => {
    const opening = (event as ToggleEvent).newState === "open";
    button.setAttribute("aria-expanded", String(opening));
    if (!opening) return;
    const rect = button.getBoundingClientRect();
    panel.style.top = `${Math.round(rect.bottom + 6)}px`;
    // Open towards the side with room: a button on the right half opens leftwards.
    if (rect.left + rect.width / 2 > window.innerWidth / 2) {
      panel.style.left = "auto";
      panel.style.right = `${Math.max(8, Math.round(window.innerWidth - rect.right))}px`;
    } else {
      panel.style.right = "auto";
      panel.style.left = `${Math.max(8, Math.round(rect.left))}px`;
    }
    onOpen?.();
  });
  // Once shown, the keyboard starts in the menu: on the current item, else the first.
  panel.addEventListener("toggle", (event) => {
    if ((event as ToggleEvent).newState !== "open") return;
    const target =
      panel.querySelector<HTMLElement>("[aria-current='true']") ?? panel.querySelector<HTMLElement>("button, a[href]");
    target?.focus({ preventScroll: false });
  });
  window.addEventListener("resize", () => {
    if (panel.matches(":popover-open")) panel.hidePopover();
  });
  return {
    close: () => {
      if (panel.matches(":popover-open")) panel.hidePopover();
    },
  };
}
