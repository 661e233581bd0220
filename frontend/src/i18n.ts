// The words the page shows, in the page's language. The server picks the language (a person's
// choice, their account's, or the browser's Accept-Language) and says it in <html lang>; the
// front end reads it once. Every string a person reads goes through t()/tn() with its English
// text as the key; src/i18n/<language>/*.json hold the translations, one file per part of the
// front end, merged into one catalogue per language at build time (esbuild bundles the JSON).
//
//   t("Run")                                   -> "运行"
//   t("Ran in {time}", { time: duration(ms) }) -> "用时 3.67 ms"
//   tn("{n} run", "{n} runs", n, { n })        -> one key for Chinese: the plural's
//   tc("session state", "Running")             -> "运行中" (key "session state|Running")
//
// Keys are string literals so that tests/frontend/test_catalogue.py can read every one from the
// source and insist each has a translation.
import courses from "./i18n/zh-hans/courses.json";
import editor from "./i18n/zh-hans/editor.json";
import explanations from "./i18n/zh-hans/explanations.json";
import pages from "./i18n/zh-hans/pages.json";
import panes from "./i18n/zh-hans/panes.json";
import workbench from "./i18n/zh-hans/workbench.json";

export type Language = "en" | "zh-hans";
type Catalogue = Record<string, string>;
type Params = Record<string, string | number>;

const catalogues: Record<Language, Catalogue> = {
  en: {},
  "zh-hans": { ...workbench, ...panes, ...pages, ...courses, ...editor, ...explanations },
};

function pageLanguage(): Language {
  const declared = typeof document === "undefined" ? "" : document.documentElement.lang.toLowerCase();
  return declared.startsWith("zh") ? "zh-hans" : "en";
}

/** The page's language, as the server declared it in <html lang>. */
export const language: Language = pageLanguage();

/** The BCP 47 tag for Intl's formatters. */
export const locale: string = language === "zh-hans" ? "zh-CN" : "en";

function fill(text: string, params?: Params): string {
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.prototype.hasOwnProperty.call(params, name) ? String(params[name]) : whole);
}

/** The text in the page's language; `{name}` placeholders are filled from params. */
export function t(english: string, params?: Params): string {
  return fill(catalogues[language][english] ?? english, params);
}

/** A text with a count: English picks `one` or `other`; Chinese has one form, keyed by `other`. */
export function tn(one: string, other: string, count: number, params?: Params): string {
  if (language === "en") return fill(count === 1 ? one : other, params);
  return fill(catalogues[language][other] ?? other, params);
}

/** A text whose translation depends on where it stands (the same English, two meanings):
 *  `tc("session state", "Running")` is 运行中 where `t("Running")`, a heading, is 运行. Its
 *  catalogue key is "context|English". */
export function tc(context: string, english: string, params?: Params): string {
  if (language === "en") return fill(english, params);
  return fill(catalogues[language][`${context}|${english}`] ?? english, params);
}

/** Whether a key has a translation in the page's language (English always has). */
export function translated(english: string): boolean {
  return language === "en" || Object.prototype.hasOwnProperty.call(catalogues[language], english);
}

const numberFormats = new Map<string, Intl.NumberFormat>();

/** A number in the locale's form (grouping, decimal mark). */
export function formatNumber(value: number, options: Intl.NumberFormatOptions = {}): string {
  const key = JSON.stringify(options);
  let format = numberFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(locale, options);
    numberFormats.set(key, format);
  }
  return format.format(value);
}

/** A date and time in the locale's form, in the reader's time zone. */
export function formatDateTime(value: Date | string | number, options: Intl.DateTimeFormatOptions = { dateStyle: "medium", timeStyle: "short" }): string {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? "" : new Intl.DateTimeFormat(locale, options).format(date);
}

/** "3 minutes ago", "刚才", in the locale's words. */
export function formatRelative(value: Date | string | number, now: number = Date.now()): string {
  const date = value instanceof Date ? value : new Date(value);
  const seconds = Math.round((date.getTime() - now) / 1000);
  const format = new Intl.RelativeTimeFormat(locale, { numeric: "auto" });
  const steps: [Intl.RelativeTimeFormatUnit, number][] = [["second", 60], ["minute", 60], ["hour", 24], ["day", 30], ["month", 12]];
  let amount = seconds;
  for (const [unit, size] of steps) {
    if (Math.abs(amount) < size) return format.format(amount, unit);
    amount = Math.round(amount / size);
  }
  return format.format(amount, "year");
}
