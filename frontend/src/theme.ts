// Light or dark. The page's CSS follows prefers-color-scheme until the person picks one; the
// choice is stored and wins from then on.
import { t } from "./i18n";
import { KEYS, local } from "./storage";

export type Theme = "light" | "dark";

const media = window.matchMedia("(prefers-color-scheme: dark)");

function stored(): Theme | null {
  const value = local.get(KEYS.theme);
  return value === "light" || value === "dark" ? value : null;
}

export function currentTheme(): Theme {
  return stored() ?? (media.matches ? "dark" : "light");
}

export function bindThemeToggle(button: HTMLButtonElement, apply: (theme: Theme) => void): void {
  const render = (theme: Theme) => {
    document.documentElement.dataset.theme = theme;
    const label = theme === "dark" ? t("Switch to light theme") : t("Switch to dark theme");
    button.setAttribute("aria-label", label);
    button.title = label;
    button.setAttribute("aria-pressed", String(theme === "dark"));
    apply(theme);
  };
  render(currentTheme());
  button.addEventListener("click", () => {
    const theme: Theme = currentTheme() === "dark" ? "light" : "dark";
    local.set(KEYS.theme, theme);
    render(theme);
  });
  media.addEventListener("change", () => {
    if (stored() === null) render(currentTheme());
  });
}

/** A page without the toggle (an embed): the theme chosen on the site, the system's, or the one
 *  the embedding page asks for (`?theme=dark`), which is not stored. */
export function followTheme(apply: (theme: Theme) => void, forced: Theme | null = null): Theme {
  const render = (theme: Theme) => {
    document.documentElement.dataset.theme = theme;
    apply(theme);
  };
  const theme = forced ?? currentTheme();
  render(theme);
  if (!forced) {
    media.addEventListener("change", () => {
      if (stored() === null) render(currentTheme());
    });
  }
  return theme;
}

/** The theme an embed's URL asks for, if any. */
export function themeFromQuery(): Theme | null {
  const value = new URLSearchParams(location.search).get("theme");
  return value === "light" || value === "dark" ? value : null;
}
