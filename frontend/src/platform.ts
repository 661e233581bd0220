export function isMac(): boolean {
  return /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
}

/** The run shortcut as this platform spells it. */
export function runShortcut(): string {
  return isMac() ? "⌘ ↵" : "Ctrl ↵";
}
