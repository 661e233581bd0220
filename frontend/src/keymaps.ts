// Vim and Emacs key bindings for the editor, from monaco-vim and monaco-emacs; each is loaded
// the first time it is chosen (a chunk of its own), and the choice is remembered.
import { t } from "./i18n";
import type { monaco } from "./monaco";
import { KEYS, local } from "./storage";

export type Keymap = "standard" | "vim" | "emacs";
export const KEYMAPS: { id: Keymap; label: string }[] = [
  { id: "standard", label: t("Standard") },
  { id: "vim", label: "Vim" },
  { id: "emacs", label: "Emacs" },
];

interface Disposable {
  dispose(): void;
}

export class Keymaps {
  private active: Disposable | null = null;
  private current: Keymap = "standard";
  private loading = 0;

  constructor(
    private readonly editor: monaco.editor.IStandaloneCodeEditor,
    /** A line under the editor for the mode's status (Vim's mode and command line). */
    private readonly statusBar: HTMLElement,
    private readonly setVimMode: (on: boolean) => void,
  ) {}

  get keymap(): Keymap {
    return this.current;
  }

  /** The keymap chosen last time (or Standard). */
  static saved(): Keymap {
    const saved = local.get(KEYS.keymap);
    return KEYMAPS.some((k) => k.id === saved) ? (saved as Keymap) : "standard";
  }

  async use(keymap: Keymap): Promise<void> {
    const ticket = ++this.loading;
    this.active?.dispose();
    this.active = null;
    this.statusBar.replaceChildren();
    this.statusBar.hidden = keymap === "standard";
    this.current = keymap;
    local.set(KEYS.keymap, keymap === "standard" ? null : keymap);
    document.body.dataset.keymap = keymap;
    this.setVimMode(keymap === "vim");
    if (keymap === "vim") {
      const { initVimMode } = await import("monaco-vim");
      if (ticket !== this.loading) return;
      this.active = initVimMode(this.editor, this.statusBar);
    } else if (keymap === "emacs") {
      const { EmacsExtension } = await import("monaco-emacs");
      if (ticket !== this.loading) return;
      const emacs = new EmacsExtension(this.editor);
      emacs.onDidMarkChange((on: boolean) => (this.statusBar.textContent = on ? t("Mark set") : t("Mark unset")));
      emacs.onDidChangeKey((keys: string) => (this.statusBar.textContent = keys));
      emacs.start();
      this.statusBar.textContent = t("Emacs keys");
      this.active = emacs;
    }
  }
}
