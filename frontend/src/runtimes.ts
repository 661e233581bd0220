// The runtime picker: which JAX a run uses (GET /api/runtimes). The page renders the catalog's
// runtimes into the select; this marks those no worker serves now and remembers the choice on
// the home page. A snippet's page starts on the snippet's runtime (it is pinned to it).
import { listRuntimes } from "./api";
import { t } from "./i18n";
import { setAnalysisRuntime } from "./intellisense";
import { KEYS, local } from "./storage";

export class RuntimePicker {
  constructor(
    private readonly select: HTMLSelectElement,
    /** A pinned snippet's runtime: chosen first, and not remembered as the person's choice. */
    private readonly pinned: string | null = null,
  ) {
    const remembered = pinned ?? local.get(KEYS.runtime);
    if (remembered && [...select.options].some((o) => o.value === remembered)) select.value = remembered;
    select.addEventListener("change", () => {
      if (!this.pinned) local.set(KEYS.runtime, select.value);
      setAnalysisRuntime(this.value);
    });
    setAnalysisRuntime(this.value);
  }

  /** The chosen runtime's id, or null for the server's default. */
  get value(): string | null {
    return this.select.value || null;
  }

  /** Marks each runtime with where it runs now; one no worker serves says so, and cannot be chosen
   *  unless it is the pinned one (whose Run then explains why it cannot run). */
  async refresh(kind: string): Promise<void> {
    let listed;
    try {
      listed = await listRuntimes();
    } catch {
      return;
    }
    for (const option of this.select.options) {
      const runtime = listed.find((r) => r.id === option.value);
      if (!runtime) continue;
      const served = runtime.kinds.includes(kind.split(":")[0]);
      const label = `JAX ${runtime.jax ?? runtime.id}`;
      option.textContent = served ? label : t("{label} · not on {kind}", { label, kind: kind.split(":")[0].toUpperCase() });
      option.disabled = !served && option.value !== this.pinned;
    }
  }
}
