// The "Libraries" menu: what a snippet can import, pinned, as the Rust Playground lists its
// crates. Versions come from the last run's "started" event (kept across reloads); before any
// run the names alone are listed.
import type { Device } from "./api";
import type { RunEvent } from "./events";
import { el } from "./dom";
import { str } from "./format";
import { t } from "./i18n";
import { bindPopover } from "./popover";
import { KEYS, local } from "./storage";

/** What every run can import, with a few words on what each is for. */
const KNOWN: [string, string][] = [
  ["numpy", t("arrays on the CPU")],
  ["scipy", t("scientific computing")],
  ["jax", "grad, jit, vmap, pmap; XLA"], // names of code: the same in every language
  ["optax", t("optimisers and losses")],
  ["flax", t("neural networks")],
  ["equinox", t("neural networks as PyTrees")],
  ["chex", t("assertions for JAX code")],
  ["einops", t("readable reshapes")],
  ["matplotlib", t("figures, shown in Figures")],
  ["rich", t("pretty terminal output")],
];

export class LibrariesMenu {
  private versions: Record<string, string> = {};
  private where = "";
  private source: "run" | "device" | null = null;
  /** Versions from a run (this page's or a stored one) outrank the device list's. */
  private fromRun = false;

  constructor(
    button: HTMLButtonElement,
    private readonly panel: HTMLElement,
  ) {
    try {
      const saved = JSON.parse(local.get(KEYS.libraries) ?? "null") as {
        versions?: Record<string, string>;
        where?: string;
      } | null;
      if (saved && typeof saved.versions === "object" && saved.versions) {
        this.versions = stringsOf(saved.versions);
        this.where = saved.where ?? "";
        this.source = "run";
        this.fromRun = true;
      }
    } catch {
      // A stale or broken entry: start from the names alone.
    }
    bindPopover(button, panel, () => this.render());
    this.render();
  }

  /** Before any run: what the chosen device kind's executors report. A run's versions win. */
  fromDevice(device: Device): void {
    if (this.fromRun) return;
    const versions = stringsOf(device.libraries);
    if (Object.keys(versions).length === 0) return;
    this.versions = versions;
    this.where = [device.kind.toUpperCase(), device.jax_version ? `JAX ${device.jax_version}` : ""].filter(Boolean).join(", ");
    this.source = "device";
    this.render();
  }

  /** A run's "started" event says what is installed where it ran. */
  handle(event: RunEvent): void {
    if (event.type !== "started") return;
    const versions = stringsOf(event.libraries);
    if (Object.keys(versions).length === 0) return;
    this.versions = versions;
    this.fromRun = true;
    this.source = "run";
    const kind = str(event.device_kind) ?? str(event.platform) ?? "";
    this.where = [kind, event.jax_version ? `JAX ${event.jax_version}` : ""].filter(Boolean).join(", ");
    local.set(KEYS.libraries, JSON.stringify({ versions, where: this.where }));
    this.render();
  }

  private render(): void {
    const names = KNOWN.map(([name]) => name);
    for (const name of Object.keys(this.versions).sort()) if (!names.includes(name)) names.push(name);
    const about = new Map(KNOWN);
    const rows = names.map((name) => {
      // A package's name is code: a page translator leaves it as it is.
      const label = el("span", "library-name", name);
      label.translate = false;
      return el(
        "li",
        "library",
        label,
        el("span", "library-version", this.versions[name] ?? ""),
        el("span", "library-about", about.get(name) ?? ""),
      );
    });
    const known = Object.keys(this.versions).length > 0;
    this.panel.replaceChildren(
      el("div", "menu-header", el("h2", "menu-title", t("Libraries")), el("p", "menu-sub", t("Pinned, in every run: import any of them."))),
      el("ul", "library-list", ...rows),
      el(
        "p",
        "menu-footer",
        !known
          ? t("Run something to see the exact versions.")
          : this.source === "device"
            ? this.where ? t("Versions on the {where} executors.", { where: this.where }) : t("Versions on the chosen executors.")
            : this.where
              ? t("Versions as installed where the last run ran ({where}).", { where: this.where })
              : t("Versions as installed where the last run ran."),
      ),
    );
  }
}

function stringsOf(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!value || typeof value !== "object" || Array.isArray(value)) return out;
  for (const [name, version] of Object.entries(value)) if (typeof version === "string") out[name] = version;
  return out;
}
