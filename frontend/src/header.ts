// The header every page has: the theme toggle (or, on a page without one, the theme followed)
// and the account menu.
import { maybeById } from "./dom";
import { bindPopover } from "./popover";
import { bindThemeToggle, followTheme, type Theme } from "./theme";

/** `onTheme` hears the theme (an editor follows it); `forced`: the theme an embedding page asks
 *  for, on a page without the toggle. */
export function bindHeader(onTheme: (theme: Theme) => void = () => {}, forced: Theme | null = null): void {
  const toggle = maybeById<HTMLButtonElement>("theme-toggle");
  if (toggle) bindThemeToggle(toggle, onTheme);
  else followTheme(onTheme, forced);
  const accountButton = maybeById<HTMLButtonElement>("account-button");
  const accountMenu = maybeById("account-menu");
  if (accountButton && accountMenu) bindPopover(accountButton, accountMenu);
}
