// The playground's Compare dialog: the editor's code on two runtimes (or two devices) at once.
// A starts as the page's own choice, B as the newest other JAX that the same device serves; both
// runs start together and the page goes to the comparison's link (/compare/<slug>), which
// follows them live.
import { ApiError, createComparison, listRuntimes, type Runtime } from "../api";
import { el } from "../dom";
import { t } from "../i18n";
import { KEYS, local } from "../storage";

export interface CompareSource {
  getCode(): string;
  /** The page's device and runtime choices now (null: the default runtime). */
  getDevice(): string;
  getRuntime(): string | null;
  /** The device select, whose online options each side may pick from. */
  deviceSelect: HTMLSelectElement;
  /** The Input both sides read as their standard input ("": none). */
  getInput?(): string;
}

export class CompareDialog {
  private readonly form: HTMLFormElement;
  private readonly error: HTMLElement;
  private readonly submit: HTMLButtonElement;
  private readonly pickers: { runtime: HTMLSelectElement; device: HTMLSelectElement }[];
  /** "Profile both": each run under jax.profiler, their timelines one above the other. */
  private readonly profile: HTMLInputElement;
  private opener: HTMLElement | null = null;
  private runtimes: Runtime[] = [];

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly source: CompareSource,
  ) {
    this.form = dialog.querySelector<HTMLFormElement>("#compare-form")!;
    this.error = dialog.querySelector<HTMLElement>("#compare-error")!;
    this.submit = dialog.querySelector<HTMLButtonElement>("#compare-submit")!;
    this.pickers = ["a", "b"].map((side) => ({
      runtime: dialog.querySelector<HTMLSelectElement>(`#compare-${side}-runtime`)!,
      device: dialog.querySelector<HTMLSelectElement>(`#compare-${side}-device`)!,
    }));
    for (const picker of this.pickers) {
      picker.device.addEventListener("change", () => this.markServed());
      picker.runtime.addEventListener("change", () => this.clearError());
    }
    this.profile = el("input");
    this.profile.type = "checkbox";
    this.profile.id = "compare-profile";
    this.profile.name = "profile";
    const label = el(
      "label",
      "compare-profile",
      this.profile,
      el("span", null, el("span", "compare-profile-name", t("Profile both")),
        el("span", "field-note", t("each under jax.profiler: their timelines one above the other"))),
    );
    label.htmlFor = this.profile.id;
    const note = this.form.querySelector(".field-note");
    if (note) note.before(label);
    else this.error.before(label);
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.start();
    });
    for (const button of dialog.querySelectorAll<HTMLButtonElement>("[data-close]")) {
      button.addEventListener("click", () => dialog.close());
    }
    dialog.addEventListener("close", () => this.opener?.focus());
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  async open(): Promise<void> {
    this.opener = document.activeElement as HTMLElement | null;
    this.clearError();
    this.submit.disabled = false;
    const devices = [...this.source.deviceSelect.options].filter((o) => o.value && !o.disabled);
    for (const picker of this.pickers) {
      picker.device.replaceChildren(
        ...(devices.length ? devices : [new Option("CPU", "cpu")]).map((o) => new Option(o.textContent ?? o.value, o.value)),
      );
    }
    const device = this.source.getDevice();
    const runtime = this.source.getRuntime() ?? this.pickers[0].runtime.options[0]?.value ?? "";
    for (const picker of this.pickers) {
      if ([...picker.device.options].some((o) => o.value === device)) picker.device.value = device;
    }
    this.pickers[0].runtime.value = runtime;
    // As Profile beside Run is: a person profiling their runs compares profiles too.
    this.profile.checked = local.get(KEYS.profile) === "true";
    this.dialog.showModal();
    // B is what a person changes: the keyboard starts there, before the runtimes' list comes.
    this.pickers[1].runtime.focus();
    const untouched = this.pickers[1].runtime.value;
    try {
      this.runtimes = await listRuntimes();
    } catch {
      this.runtimes = [];
    }
    // B: the newest other runtime this device serves (the catalog lists the default first),
    // unless the person chose one while the list was on its way.
    if (this.pickers[1].runtime.value === untouched) this.pickers[1].runtime.value = this.otherThan(runtime);
    this.markServed();
  }

  /** The newest runtime but `runtime` that A's device serves, else any other. */
  private otherThan(runtime: string): string {
    const kind = this.pickers[0].device.value.split(":")[0];
    const served = this.runtimes.find((r) => r.id !== runtime && r.kinds.includes(kind));
    const any = [...this.pickers[1].runtime.options].find((o) => o.value !== runtime);
    return served?.id ?? any?.value ?? runtime;
  }

  /** Says "· not on CPU" beside a runtime no worker of that side's device serves. */
  private markServed(): void {
    for (const picker of this.pickers) {
      const kind = picker.device.value.split(":")[0];
      for (const option of picker.runtime.options) {
        const runtime = this.runtimes.find((r) => r.id === option.value);
        const label = `JAX ${runtime?.jax ?? option.value}`;
        const served = !runtime || runtime.kinds.includes(kind);
        option.textContent = served ? label : t("{runtime} · not on {device}", { runtime: label, device: kind.toUpperCase() });
      }
    }
    this.clearError();
  }

  private clearError(): void {
    this.error.hidden = true;
    this.error.textContent = "";
  }

  private async start(): Promise<void> {
    const [a, b] = this.pickers.map((p) => ({ runtime: p.runtime.value || null, device: p.device.value || "cpu" }));
    if (a.runtime === b.runtime && a.device === b.device) {
      this.showError(t("A and B are the same: choose another JAX version or another device for one of them."));
      return;
    }
    this.submit.disabled = true;
    this.submit.replaceChildren(el("span", "spinner"), t("Starting both runs…"));
    try {
      const stdin = this.source.getInput?.() ?? "";
      const comparison = await createComparison({
        code: this.source.getCode(),
        sides: [a, b],
        ...(stdin ? { stdin } : {}),
        ...(this.profile.checked ? { options: { profile: true } } : {}),
      });
      location.assign(comparison.url);
    } catch (error) {
      this.submit.disabled = false;
      this.submit.textContent = t("Compare");
      this.showError(error instanceof ApiError ? error.message : String(error));
    }
  }

  private showError(text: string): void {
    this.error.hidden = false;
    this.error.textContent = text;
  }
}
