// The keyboard shortcuts panel (F1, or the keyboard button above the editor): every shortcut
// the page has, and the choice of key bindings (Standard, Vim, Emacs). A modal <dialog>, so the
// browser traps and returns the focus as the ARIA dialog pattern asks.
import { el } from "./dom";
import { t } from "./i18n";
import { KEYMAPS, type Keymap, type Keymaps } from "./keymaps";
import { isMac } from "./platform";

function keys(text: string): HTMLElement {
  const mac = isMac();
  const out = el("span", "shortcut-keys");
  text.split(" / ").forEach((combo, i) => {
    if (i > 0) out.append(` ${t("or")} `);
    const label = mac ? combo.replace("Ctrl+", "⌘").replace("Alt+", "⌥").replace("Shift+", "⇧") : combo;
    out.append(el("kbd", null, label));
  });
  return out;
}

const SHORTCUTS: [string, [string, string][]][] = [
  [t("Running"), [
    [t("Run the code"), "Ctrl+Enter"],
    [t("Share a link"), "Ctrl+S"],
  ]],
  [t("Editing"), [
    [t("Format the code (ruff)"), "Shift+Alt+F"],
    [t("Comment or uncomment lines"), "Ctrl+/"],
    [t("Find / replace"), "Ctrl+F / Ctrl+H"],
    [t("Undo / redo"), "Ctrl+Z / Ctrl+Shift+Z"],
    [t("Code font larger / smaller / default"), "Ctrl+= / Ctrl+- / Ctrl+0"],
  ]],
  [t("Moving around"), [
    [t("Leave the editor"), "Escape"],
    [t("Tab moves the focus instead of indenting (and back)"), isMac() ? "Ctrl+Shift+M" : "Ctrl+M"],
    [t("Next / previous result tab (on the tab bar)"), "→ / ←"],
    [t("First / last result tab"), "Home / End"],
    [t("Move in a menu; close it"), "↓ / ↑"],
    [t("This panel"), "F1"],
  ]],
];

export class ShortcutsDialog {
  private readonly dialog: HTMLDialogElement;
  private readonly select: HTMLSelectElement;

  constructor(private readonly keymaps: Keymaps) {
    this.dialog = el("dialog", "dialog shortcuts-dialog");
    this.dialog.id = "shortcuts-dialog";
    this.dialog.setAttribute("aria-labelledby", "shortcuts-heading");
    const close = el("button", "button button-icon button-quiet dialog-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", t("Close"));
    close.addEventListener("click", () => this.dialog.close());
    const title = el("h2", "dialog-title", t("Keyboard shortcuts"));
    title.id = "shortcuts-heading";

    this.select = el("select", "select-small");
    this.select.id = "keymap-select";
    for (const k of KEYMAPS) {
      const option = el("option", null, k.label);
      option.value = k.id;
      this.select.append(option);
    }
    this.select.addEventListener("change", () => void this.keymaps.use(this.select.value as Keymap));
    const label = el("label", "keymap-picker", t("Key bindings in the editor"), " ", this.select);
    label.htmlFor = "keymap-select";

    const sections = SHORTCUTS.map(([heading, rows]) =>
      el("section", "shortcut-group", el("h3", "shortcut-heading", heading),
        el("dl", "shortcut-list", ...rows.flatMap(([what, combo]) => [el("dt", null, what), el("dd", null, keys(combo))]))),
    );
    this.dialog.append(
      el("div", "dialog-header", title, close),
      el("div", "dialog-body", label, el("p", "dialog-note", t("Vim and Emacs bindings come from monaco-vim and monaco-emacs; Escape in Vim mode returns to normal mode, so leave the editor with Ctrl+M then Tab.")), ...sections),
    );
    document.body.append(this.dialog);
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  open(): void {
    this.select.value = this.keymaps.keymap;
    if (!this.dialog.open) this.dialog.showModal();
  }
}
