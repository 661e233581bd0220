// The device selector, filled from GET /api/devices and refreshed while the page is open so an
// executor that comes online (or goes away) shows up without a reload. Each kind is an option
// ("GPU"), followed by the specific kinds online under it ("GPU: H200", value "gpu:h200").
import { listDevices, type Device, type SpecificDevice } from "./api";
import { formatNumber, t, tn } from "./i18n";
import { KEYS, local } from "./storage";

// One small GET while the page is visible (and at once when it becomes visible again).
const REFRESH_MS = 15_000;

/** `withJax`: say the JAX its workers run (not where a JAX version picker says it). */
export function deviceLabel(device: Device, withJax = true): string {
  const kind = device.kind.toUpperCase();
  if (!device.online) return t("{kind} · offline", { kind });
  const parts = [kind];
  const count = device.device_count ?? 0;
  const deviceKind = device.device_kind ?? "";
  if (count > 0) {
    parts.push(
      deviceKind && deviceKind.toLowerCase() !== device.kind.toLowerCase()
        ? `${count} × ${deviceKind}`
        : tn("{n} device", "{n} devices", count, { n: formatNumber(count) }),
    );
  }
  if (withJax && device.jax_version) parts.push(`JAX ${device.jax_version}`);
  if (device.queue_depth) parts.push(t("{n} queued", { n: formatNumber(device.queue_depth) }));
  return parts.join(" · ");
}

/** "GPU: H200 · 2 free · 1 queued" for gpu:h200; "TPU: v5e · 1 of 4 chips free · 3 waiting" for chips. */
export function specificLabel(specific: SpecificDevice): string {
  const [kind, name] = specific.device.split(":");
  const parts = [`${kind.toUpperCase()}: ${specific.device_kind || name}`];
  if (specific.chips) {
    // A chip holds one run at a time: what is free is its chips, and runs wait on the nodes.
    const free = formatNumber(specific.chips_ready ?? 0);
    parts.push(t("{free} of {n} chips free", { free, n: formatNumber(specific.chips) }));
    if (specific.chip_waiting) parts.push(t("{n} waiting", { n: formatNumber(specific.chip_waiting) }));
  } else if (specific.free_runners !== undefined) parts.push(t("{n} free", { n: formatNumber(specific.free_runners) }));
  if (specific.queue_depth) parts.push(t("{n} queued", { n: formatNumber(specific.queue_depth) }));
  return parts.join(" · ");
}

/**
 * What the list says of a device string, a kind ("gpu") or a specific kind ("gpu:h200"): whether
 * a worker for it is online and the JAX it runs. A specific kind absent from the list is offline.
 */
export function findDevice(
  devices: readonly Device[],
  wanted: string,
): { online: boolean; jax_version?: string | null } | null {
  const [kind] = wanted.split(":");
  const device = devices.find((d) => d.kind === kind);
  if (!device || wanted === kind) return device ?? null;
  const specific = (device.specific ?? []).find((s) => s.device === wanted);
  return specific ? { online: device.online && specific.workers > 0, jax_version: specific.jax_version } : null;
}

/** The specific kinds worth offering apart from their kind: not a CPU's "cpu:cpu". */
function specificsOf(device: Device): SpecificDevice[] {
  return (device.specific ?? []).filter((s) => s.device.split(":")[1] !== device.kind);
}

export interface DevicePickerOptions {
  /** What is wrong with the list (none online, it could not be loaded), or null when nothing is. */
  onProblem(message: string | null): void;
  /** Called with the chosen device (online), whenever the list or the choice changes. */
  onChoice?(device: Device): void;
  /** The kind to choose when the person has not chosen one here (a snippet's own). */
  preferred?: string | null;
  /** Called with the whole list each time it is loaded. */
  onList?(devices: Device[]): void;
  /** Whether a kind's label says its JAX version (false beside a JAX version picker). */
  withJax?: boolean;
}

export class DevicePicker {
  private timer: number | undefined;
  private readonly onProblem: (message: string | null) => void;
  private readonly onChoice: (device: Device) => void;
  private readonly preferred: string | null;
  private readonly onList: (devices: Device[]) => void;
  private readonly withJax: boolean;

  constructor(private readonly select: HTMLSelectElement, options: DevicePickerOptions) {
    this.onProblem = options.onProblem;
    this.onChoice = options.onChoice ?? (() => {});
    this.preferred = options.preferred ?? null;
    this.onList = options.onList ?? (() => {});
    this.withJax = options.withJax ?? true;
    select.addEventListener("change", () => {
      local.set(KEYS.device, select.value);
      this.announce();
    });
  }

  private devices: Device[] = [];

  private announce(): void {
    const kind = (this.value ?? "").split(":")[0];
    const device = this.devices.find((d) => d.kind === kind);
    if (device) this.onChoice(device);
  }

  /** The chosen device kind, or null when none is online. */
  get value(): string | null {
    const option = this.select.selectedOptions[0];
    return option && !option.disabled && option.value ? option.value : null;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.timer = window.setInterval(() => {
      if (document.visibilityState === "visible") void this.refresh();
    }, REFRESH_MS);
    document.addEventListener("visibilitychange", this.onVisible);
  }

  private readonly onVisible = (): void => {
    if (document.visibilityState === "visible") void this.refresh();
  };

  stop(): void {
    window.clearInterval(this.timer);
    document.removeEventListener("visibilitychange", this.onVisible);
  }

  async refresh(): Promise<void> {
    let devices: Device[];
    try {
      devices = await listDevices();
    } catch (error) {
      // Keep what we had; on first load let a run try the default kind anyway.
      if (this.select.options.length === 0 || !this.select.options[0].value) {
        this.fill([{ kind: "cpu", online: true }], "CPU");
      }
      this.onProblem(t("Could not load devices: {error}", { error: (error as Error).message }));
      return;
    }
    this.devices = devices;
    this.fill(devices);
    this.announce();
    this.onList(devices);
    this.onProblem(
      devices.some((d) => d.online) ? null : t("No executor is online right now. Try again shortly."),
    );
  }

  private fill(devices: Device[], fallbackLabel?: string): void {
    const wanted = this.select.value || this.preferred || local.get(KEYS.device) || "";
    const options = devices.flatMap((device) => {
      const option = document.createElement("option");
      option.value = device.kind;
      option.textContent = fallbackLabel ?? deviceLabel(device, this.withJax);
      option.disabled = !device.online;
      if (device.online && device.workers !== undefined) {
        const workers = tn("{n} worker", "{n} workers", device.workers, { n: formatNumber(device.workers) });
        const slots = device.slots ?? "?";
        option.title = device.free_runners !== undefined
          ? t("{workers}, {slots} slots, {free} free", { workers, slots, free: formatNumber(device.free_runners) })
          : t("{workers}, {slots} slots", { workers, slots });
      }
      const specifics = device.online && !fallbackLabel ? specificsOf(device) : [];
      return [
        option,
        ...specifics.map((specific) => {
          const choice = document.createElement("option");
          choice.value = specific.device;
          choice.textContent = specificLabel(specific);
          choice.title = tn("Only {device} executors: {n} worker", "Only {device} executors: {n} workers", specific.workers, {
            device: specific.device,
            n: formatNumber(specific.workers),
          });
          return choice;
        }),
      ];
    });
    if (options.length === 0) {
      const none = document.createElement("option");
      none.value = "";
      none.textContent = t("No devices");
      none.disabled = true;
      options.push(none);
    }
    this.select.replaceChildren(...options);
    const choice =
      options.find((o) => o.value === wanted && !o.disabled) ?? options.find((o) => !o.disabled);
    if (choice) choice.selected = true;
    this.select.disabled = !options.some((o) => !o.disabled);
  }
}
