// A menu that drops from a header button: the browser's popover (light dismiss, Escape, top
// layer), placed under its button.

export function bindPopover(
  button: HTMLButtonElement,
  panel: HTMLElement,
  onOpen?: () => void,
): { close(): void } {
  panel.popover = "auto";
  button.popoverTargetElement = panel;
  // The disclosure pattern (a button showing a panel of links and buttons), not role="menu":
  // the panel's items stay ordinary controls that Tab reaches; the arrows move among them too.
  button.setAttribute("aria-expanded", "false");
  if (panel.id) button.setAttribute("aria-controls", panel.id);
  panel.addEventListener("keydown", (event) => moveAmongItems(panel, event));
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

/** Up/Down (and Home/End) move the focus among a panel's buttons and links. */
function moveAmongItems(panel: HTMLElement, event: KeyboardEvent): void {
  const keys = ["ArrowDown", "ArrowUp", "Home", "End"];
  if (!keys.includes(event.key) || event.altKey || event.ctrlKey || event.metaKey) return;
  // A list box in the panel (the JAX version's) keeps its own arrows.
  if (event.target instanceof HTMLSelectElement) return;
  const items = [...panel.querySelectorAll<HTMLElement>("button:not([disabled]), a[href]")].filter(
    (item) => item.offsetParent !== null,
  );
  if (items.length === 0) return;
  const at = items.indexOf(document.activeElement as HTMLElement);
  const index =
    event.key === "Home" ? 0
    : event.key === "End" ? items.length - 1
    : event.key === "ArrowDown" ? (at + 1) % items.length
    : (at - 1 + items.length) % items.length;
  items[index].focus();
  event.preventDefault();
}
