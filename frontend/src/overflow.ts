// The top bar on a phone: what has no room in its one row (the JAX version picker, Compare)
// moves into a "More" menu rather than vanishing, and back to its place when the window widens.
// The controls themselves move, not copies: their listeners, state and ids stay one.
import { bindPopover } from "./popover";

/** Moves `items` into `menu` while `query` matches (a phone's width), back where they were when it
 *  stops; `button` opens the menu and is shown only while it holds something. */
export function overflowMenu(button: HTMLButtonElement, menu: HTMLElement, items: HTMLElement[], query: string): void {
  const present = items.filter((item) => item.isConnected);
  if (!present.length) {
    button.hidden = true;
    return;
  }
  // Each item's place in the bar, kept by an empty marker before it.
  const marks = present.map((item) => {
    const mark = document.createComment("overflow");
    item.before(mark);
    return mark;
  });
  const popover = bindPopover(button, menu);
  // A click on an item of the menu (Compare) does its work; the menu closes behind it.
  menu.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest("button")) popover.close();
  });
  const media = window.matchMedia(query);
  const place = () => {
    const narrow = media.matches;
    present.forEach((item, i) => {
      if (narrow) menu.append(item);
      else marks[i].after(item);
    });
    button.hidden = !narrow;
    if (!narrow) popover.close();
  };
  media.addEventListener("change", place);
  place();
}
