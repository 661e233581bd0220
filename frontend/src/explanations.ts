// What the server said in English, in the page's language. An error's explanation and a run's
// ending are stored as they were made, English, and shared: the event carries the template they
// were filled from and its args (executor/runner/explain.py, executor/events.py), and the page
// fills the template's translation itself. A template this page does not know (an event older or
// newer than it) leaves the English as sent.
import { str } from "./format";
import { language, t, translated } from "./i18n";

type Args = Record<string, string | number>;

const PLACEHOLDER = /\{(\w+)\}/g;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The args, each a text or a number; an arg that is itself a message ({template, args}) in the
 * page's language too. Null when one is neither. */
function filledArgs(args: unknown): Args | null {
  if (!isRecord(args)) return null;
  const out: Args = {};
  for (const [name, value] of Object.entries(args)) {
    if (typeof value === "string" || typeof value === "number") {
      out[name] = value;
    } else if (isRecord(value) && typeof value.template === "string") {
      const inner = said(value.template, value.args);
      if (inner === null) return null;
      out[name] = inner;
    } else {
      return null;
    }
  }
  return out;
}

/** The template filled in the page's language; null unless every placeholder has its arg. */
function said(template: string, args: unknown): string | null {
  const filled = filledArgs(args ?? {});
  if (filled === null) return null;
  for (const [, name] of template.matchAll(PLACEHOLDER)) {
    if (!Object.prototype.hasOwnProperty.call(filled, name)) return null;
  }
  return t(template, filled);
}

function inPageLanguage(english: string | null, template: unknown, args: unknown): string | null {
  // English is what was sent; another language only from a template the catalogue has.
  if (language === "en" || typeof template !== "string" || !translated(template)) return english;
  return said(template, args) ?? english;
}

/** An error event's explanation in the page's language, or null when it has none. */
export function explanationText(event: Record<string, unknown>): string | null {
  const english = str(event.explanation);
  if (english === null) return null;
  return inPageLanguage(english, event.explanation_template, event.explanation_args);
}

/** A finished event's message in the page's language, or null when it has none. */
export function finishedMessageText(event: Record<string, unknown>): string | null {
  const english = str(event.message);
  if (english === null) return null;
  return inPageLanguage(english, event.message_template, event.message_args);
}

/** Sentences sent as parts ([{template, args}], as executor/runner/recompile.py sends a
 * compilation's reasons and warning) in the page's language; null on an English page, or when one
 * of them is not in the catalogue (then the English sent is shown). */
export function partsText(parts: unknown): string[] | null {
  if (language === "en" || !Array.isArray(parts) || parts.length === 0) return null;
  const out: string[] = [];
  for (const part of parts) {
    if (!isRecord(part) || typeof part.template !== "string" || !translated(part.template)) return null;
    const text = said(part.template, part.args);
    if (text === null) return null;
    out.push(text);
  }
  return out;
}
