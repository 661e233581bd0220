// What every course page shares: a notice that survives the reload after a change, dialogs, a
// submission's checks, and dates, scores and errors in plain words.
import { ApiError } from "./api";
import type { Submission } from "./course-api";
import { el, maybeById } from "./dom";
import { formatDateTime, language, t } from "./i18n";
import { session } from "./storage";

const FLASH_KEY = "courses.flash";

/** A message shown on the next page this tab loads (after a reload or a redirect). */
export function flashNext(text: string): void {
  session.set(FLASH_KEY, text);
}

/** Shows the message left by the previous page, if any, in #flash. */
export function showFlash(): void {
  const text = session.get(FLASH_KEY);
  session.set(FLASH_KEY, null);
  const box = maybeById("flash");
  if (!text || !box) return;
  box.textContent = text;
  box.hidden = false;
}

/** The server's message as a sentence: a capital first letter and a full stop (a Chinese one
 *  on a Chinese page). */
export function sentence(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return trimmed;
  const stop = /[.!?。！？]$/.test(trimmed) ? "" : language === "zh-hans" ? "。" : ".";
  return trimmed[0].toUpperCase() + trimmed.slice(1) + stop;
}

export function errorText(error: unknown, doing = ""): string {
  if (error instanceof ApiError) {
    if (error.status === 0) return error.message;
    if (error.status === 429) return sentence(t("Too many requests: {message}", { message: error.message }));
    if (error.status >= 500) {
      return doing
        ? t("{doing}: the server failed ({status}). Try again in a moment.", { doing, status: error.status })
        : t("the server failed ({status}). Try again in a moment.", { status: error.status });
    }
    return sentence(error.message);
  }
  return sentence(String(error));
}

/** Items as a list in the page's language: "a, b, c", "a、b、c". */
export function listOf(items: readonly string[]): string {
  return items.join(language === "zh-hans" ? "、" : ", ");
}

/** Phrases one after another in a sentence: "a, b, c", "a，b，c". */
export function clauses(items: readonly string[]): string {
  return items.join(language === "zh-hans" ? "，" : ", ");
}

/** A translated text whose `{name}` placeholders are elements (a name in bold, a link): the
 *  text's parts and the elements in the order the language puts them. */
export function compose(text: string, parts: Record<string, Node | string | null>): (Node | string)[] {
  const out: (Node | string)[] = [];
  let at = 0;
  for (const match of text.matchAll(/\{(\w+)\}/g)) {
    const part = parts[match[1]];
    if (part === undefined) continue;
    if (match.index > at) out.push(text.slice(at, match.index));
    if (part !== null) out.push(part);
    at = match.index + match[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** Shows `text` in an error box (role="alert"), or hides it (null). */
export function setError(box: HTMLElement, text: string | null): void {
  box.textContent = text ?? "";
  box.hidden = !text;
}

const DATE_TIME: Intl.DateTimeFormatOptions = {
  day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit",
};

/** "3 May 2026, 14:05" ("2026年5月3日 14:05") in the reader's time zone. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  // English keeps the day-first, 24-hour form these pages have always shown.
  return language === "en" ? date.toLocaleString("en-GB", DATE_TIME) : formatDateTime(date, DATE_TIME);
}

/** Dates the server wrote (<time datetime data-local>) in the reader's time zone. */
export function localizeTimes(root: ParentNode = document): void {
  for (const time of root.querySelectorAll<HTMLTimeElement>("time[data-local]")) {
    const text = dateTime(time.dateTime);
    if (text) time.textContent = text;
  }
}

/** "14:05:09". */
export function clockTime(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === "") return "";
  const date = typeof iso === "number" ? new Date(iso * 1000) : new Date(iso);
  return formatDateTime(date, { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
}

/** "just now", "5 min ago", "3 h ago", else the date (in the page's language). */
export function ago(iso: string | null | undefined): string {
  if (!iso) return "";
  const then = new Date(iso).getTime();
  if (Number.isNaN(then)) return "";
  const s = Math.round((Date.now() - then) / 1000);
  if (s < 45) return t("just now");
  if (s < 3600) return t("{n} min ago", { n: Math.max(1, Math.round(s / 60)) });
  if (s < 86400) return t("{n} h ago", { n: Math.round(s / 3600) });
  return dateTime(iso);
}

/** A score as people read it: 7.5, 8, 0.33. */
export function points(value: number | null | undefined): string {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 100) / 100);
}

/** The tone of a score: all points, some, none. */
export function scoreTone(score: number | null | undefined, max: number | null | undefined): "ok" | "part" | "bad" | "none" {
  if (typeof score !== "number" || typeof max !== "number") return "none";
  if (max <= 0) return "ok";
  if (score >= max - 1e-9) return "ok";
  return score > 0 ? "part" : "bad";
}

/** A submission's checks: passed, failed or could not run (its own code crashed), each with its
 *  message and points. */
export function checkList(checks: NonNullable<Submission["checks"]>): HTMLElement {
  const list = el("ul", "check-list");
  list.setAttribute("aria-label", t("Checks"));
  for (const check of checks) {
    const worth = typeof check.points === "number" ? check.points : null;
    const got = check.passed ? worth : 0;
    const crashed = Boolean(check.crashed);
    const icon = el("span", "check-icon", check.passed ? "✓" : crashed ? "!" : "✗");
    icon.setAttribute("aria-hidden", "true");
    const state = check.passed ? t("Passed: ") : crashed ? t("Could not run: ") : t("Failed: ");
    const item = el("li", "check",
      icon,
      el("span", "check-text",
        el("span", "check-name", el("span", "visually-hidden", state), check.name),
        check.message ? el("span", "check-message", check.message) : null),
      worth === null ? null : el("span", "check-points", crashed ? `– / ${points(worth)}` : `${points(got)} / ${points(worth)}`),
    );
    item.dataset.passed = String(Boolean(check.passed));
    if (crashed) item.dataset.crashed = "true";
    list.append(item);
  }
  if (checks.length === 0) list.append(el("li", "check check-none", t("No checks were reported.")));
  return list;
}

/** A text (code, a log) under a summary that opens it. */
export function textDetails(summary: string, text: string, className = ""): HTMLElement {
  const box = el("details", `submission-details ${className}`.trim(), el("summary", null, summary));
  const pre = el("pre", "submission-pre", text);
  pre.tabIndex = 0;
  box.append(pre);
  return box;
}

/** Opens a modal <dialog>; its [data-close] buttons close it, and the focus goes back where it was. */
export function bindDialog(dialog: HTMLDialogElement): { open(): void; close(): void } {
  let returnTo: HTMLElement | null = null;
  for (const button of dialog.querySelectorAll<HTMLElement>("[data-close]")) {
    button.addEventListener("click", () => dialog.close());
  }
  dialog.addEventListener("close", () => {
    // The browser gives the focus back itself as the dialog closes; the "close" event comes a
    // moment later, when the person may have moved on: only a focus that was lost goes back.
    const active = document.activeElement;
    if (returnTo && (active === null || active === document.body || dialog.contains(active))) returnTo.focus();
    returnTo = null;
  });
  return {
    open() {
      returnTo = document.activeElement as HTMLElement | null;
      if (!dialog.open) dialog.showModal();
    },
    close() {
      if (dialog.open) dialog.close();
    },
  };
}
