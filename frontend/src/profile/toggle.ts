// Profile, beside Run: a toggle button (aria-pressed) whose state the browser keeps. While it is
// on, a run is started with {"options": {"profile": true}} and runs under jax.profiler; its
// timeline lands in the Timeline tab.
import { el, strokeIcon } from "../dom";
import { t } from "../i18n";
import { KEYS, local } from "../storage";

export const PROFILE_TITLE = t("Run under jax.profiler and show a timeline per device");

export class ProfileToggle {
  readonly button: HTMLButtonElement;

  /** Placed before `run` (the page's Run button), in its size; `onChange` hears it turned. */
  constructor(run: HTMLButtonElement, private readonly onChange: (on: boolean) => void = () => {}) {
    // A stopwatch's face with a trace across it.
    const icon = strokeIcon("M2 8.5h2.2l1.3-3 2 6 1.6-4.2 1.1 1.2H14");
    this.button = el("button", "button profile-toggle", icon, el("span", "profile-toggle-label", t("Profile")));
    if (run.classList.contains("button-small")) this.button.classList.add("button-small");
    this.button.type = "button";
    this.button.id = "profile-toggle";
    this.button.title = PROFILE_TITLE;
    this.render();
    this.button.addEventListener("click", () => {
      local.set(KEYS.profile, this.on ? null : "true");
      this.render();
      this.onChange(this.on);
    });
    run.before(this.button);
  }

  /** Whether the next run is profiled. */
  get on(): boolean {
    return local.get(KEYS.profile) === "true";
  }

  private render(): void {
    this.button.setAttribute("aria-pressed", String(this.on));
  }
}
