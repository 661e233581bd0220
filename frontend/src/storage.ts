// Browser storage that never throws: private windows and full quotas only lose persistence.

function safe(kind: "localStorage" | "sessionStorage"): Storage | null {
  try {
    return window[kind];
  } catch {
    return null;
  }
}

function wrap(kind: "localStorage" | "sessionStorage") {
  return {
    get(key: string): string | null {
      try {
        return safe(kind)?.getItem(key) ?? null;
      } catch {
        return null;
      }
    },
    set(key: string, value: string | null): void {
      try {
        if (value === null) safe(kind)?.removeItem(key);
        else safe(kind)?.setItem(key, value);
      } catch {
        // Quota exceeded or storage disabled: keep working without it.
      }
    },
  };
}

/** Survives reloads and new tabs: the code, the theme, the device, the split, the example. */
export const local = wrap("localStorage");
/** Survives reloads of this tab only: the run being watched. */
export const session = wrap("sessionStorage");

export const KEYS = {
  /** Read once, into drafts (see below). */
  code: "playground.code",
  theme: "playground.theme",
  device: "playground.device",
  /** The runtime chosen on the home page (a snippet's page uses the snippet's). */
  runtime: "playground.runtime",
  split: "playground.split",
  run: "playground.run",
  /** Every draft: the person's own code and each example or snippet they edited (drafts.ts). */
  drafts: "playground.drafts",
  /** The draft the home page has open ("own", "example:<slug>"). */
  current: "playground.current",
  /** Earlier versions kept one draft (code), the example it came from and the code kept aside
   *  (scratch); read once, into drafts. */
  example: "playground.example",
  scratch: "playground.scratch",
  libraries: "playground.libraries",
  /** The editor's key bindings, when not the standard ones ("vim", "emacs"). */
  keymap: "playground.keymap",
  /** The editor's font size (px); the output follows it. */
  fontSize: "playground.fontSize",
  /** "false": the output keeps long lines as printed instead of wrapping them. */
  wrap: "playground.wrap",
  /** "true": the editor wraps long lines (Wrap in the editor's header, Alt+Z). */
  codeWrap: "playground.codeWrap",
  /** "true": runs are profiled (Profile beside Run). */
  profile: "playground.profile",
} as const;
