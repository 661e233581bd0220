// The device selector, filled from GET /api/devices and refreshed while the page is open so an
// executor that comes online (or goes away) shows up without a reload.
import { listDevices, type Device } from "./api";
import { KEYS, local } from "./storage";

const REFRESH_MS = 30_000;

export function deviceLabel(device: Device): string {
  const kind = device.kind.toUpperCase();
  if (!device.online) return `${kind} · offline`;
  const parts = [kind];
  const count = device.device_count ?? 0;
  const deviceKind = device.device_kind ?? "";
  if (count > 0) {
    parts.push(
      deviceKind && deviceKind.toLowerCase() !== device.kind.toLowerCase()
        ? `${count} × ${deviceKind}`
        : `${count} ${count === 1 ? "device" : "devices"}`,
    );
  }
  if (device.jax_version) parts.push(`JAX ${device.jax_version}`);
  if (device.queue_depth) parts.push(`${device.queue_depth} queued`);
  return parts.join(" · ");
}

export class DevicePicker {
  private timer: number | undefined;

  constructor(
    private readonly select: HTMLSelectElement,
    private readonly onProblem: (message: string | null) => void,
    /** Called with the chosen device (online), whenever the list or the choice changes. */
    private readonly onChoice: (device: Device) => void = () => {},
    /** The kind to choose when the person has not chosen one here (a snippet's own). */
    private readonly preferred: string | null = null,
    /** Called with the whole list each time it is loaded. */
    private readonly onList: (devices: Device[]) => void = () => {},
  ) {
    select.addEventListener("change", () => {
      local.set(KEYS.device, select.value);
      this.announce();
    });
  }

  private devices: Device[] = [];

  private announce(): void {
    const device = this.devices.find((d) => d.kind === this.value);
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
  }

  stop(): void {
    window.clearInterval(this.timer);
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
      this.onProblem(`Could not load devices: ${(error as Error).message}`);
      return;
    }
    this.devices = devices;
    this.fill(devices);
    this.announce();
    this.onList(devices);
    this.onProblem(
      devices.some((d) => d.online) ? null : "No executor is online right now. Try again shortly.",
    );
  }

  private fill(devices: Device[], fallbackLabel?: string): void {
    const wanted = this.select.value || this.preferred || local.get(KEYS.device) || "";
    const options = devices.map((device) => {
      const option = document.createElement("option");
      option.value = device.kind;
      option.textContent = fallbackLabel ?? deviceLabel(device);
      option.disabled = !device.online;
      if (device.online && device.workers !== undefined) {
        option.title = `${device.workers} worker${device.workers === 1 ? "" : "s"}, ${device.slots ?? "?"} slots`;
      }
      return option;
    });
    if (options.length === 0) {
      const none = document.createElement("option");
      none.value = "";
      none.textContent = "No devices";
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
