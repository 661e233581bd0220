// An assignment's attempt against its starter code: the attempt's draft (none while it is the
// starter code), Reset to the starter code, and "Code reset. Undo", which brings back the code
// Reset replaced (kept as a draft of its own in this browser, so after a reload too) until the
// person types again.
import { byId, el, maybeById } from "../dom";
import { RESET_PREFIX, type Drafts } from "../drafts";
import type { CodeEditor } from "../editor";
import { t } from "../i18n";
import type { AssignmentData } from "./model";

export interface Reset {
  /** The editor's code changed: the draft and the Reset button follow it; typing after a Reset
   *  takes Undo away (Undo would replace the typing; the kept code stays). */
  edited(text: string): void;
  /** The starter code changed (an instructor's save): an attempt still at the old one (or empty)
   *  follows the new one, as a student starts from it. */
  starterChanged(starter: string): void;
}

/** Binds #reset-code and #undo-bar to the attempt in `code`, whose draft is `draftKey`'s (named
 *  by the assignment's title, as it is when the draft is saved). */
export function bindReset(code: CodeEditor, drafts: Drafts, draftKey: string, data: AssignmentData): Reset {
  // The starter code the attempt is measured against: data's is the new one already when a save
  // tells starterChanged.
  let starter = data.starter_code;
  const resetKey = RESET_PREFIX + draftKey;
  const undoBar = maybeById("undo-bar");
  const button = byId<HTMLButtonElement>("reset-code");
  // While Reset itself puts the starter code in: not typing, so Undo stays.
  let restoring = false;

  const hideUndo = () => {
    if (undoBar) undoBar.hidden = true;
  };
  const showUndo = (focus: boolean) => {
    if (!undoBar) return;
    const undo = el("button", "button button-small undo-button", t("Undo"));
    undo.type = "button";
    undo.title = t("Bring back the code you had before Reset");
    undo.addEventListener("click", () => {
      const kept = drafts.get(resetKey);
      hideUndo();
      if (!kept) return;
      drafts.remove(resetKey);
      code.setCode(kept.code);
      code.editor.focus();
    });
    undoBar.replaceChildren(el("span", "undo-text", t("Code reset. "), el("span", "undo-sub", t("Your code before it is kept."))), undo);
    undoBar.hidden = false;
    if (focus) undo.focus();
  };

  button.disabled = code.getCode() === starter;
  button.addEventListener("click", () => {
    const before = code.getCode();
    restoring = true;
    try {
      code.setCode(starter);
    } finally {
      restoring = false;
    }
    drafts.remove(draftKey);
    if (before !== starter) drafts.save(resetKey, t("{title} (before Reset)", { title: data.title }), before);
    showUndo(true);
  });
  if (drafts.get(resetKey) && code.getCode() === starter) showUndo(false);

  return {
    edited(text: string): void {
      if (text === starter) drafts.remove(draftKey);
      else drafts.save(draftKey, data.title, text);
      button.disabled = text === starter;
      if (!restoring) hideUndo();
    },
    starterChanged(fresh: string): void {
      const untouched = code.getCode() === starter;
      starter = fresh;
      if (untouched && code.getCode() !== starter) code.setCode(starter);
      button.disabled = code.getCode() === starter;
    },
  };
}
