// Small DOM helpers every page uses: elements by id, the JSON the server rendered into the page,
// building elements, moving the focus on, the clipboard and downloads.

/** The element with this id; a page without it is broken, so this throws. */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

/** An element only some pages have (the embed has no menus, no share, no theme toggle). */
export function maybeById<T extends HTMLElement>(id: string): T | null {
  return document.getElementById(id) as T | null;
}

/** The JSON the server rendered into <script type="application/json" id=...>. */
export function pageData<T>(id: string): T | null {
  const script = document.getElementById(id);
  if (!script) return null;
  try {
    return JSON.parse(script.textContent ?? "null") as T;
  } catch {
    return null;
  }
}

/** Builds an element: el("span", "class names", "text", child...). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string | null,
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

/** A 16×16 stroked icon (the site's icon style) drawn by one SVG path. */
export function strokeIcon(d: string): SVGSVGElement {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("aria-hidden", "true");
  svg.classList.add("icon-stroke");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", d);
  svg.append(path);
  return svg;
}

/** Focus the first control after ``element`` in the page's order that can take it. */
export function focusAfter(element: HTMLElement): void {
  const candidates = document.querySelectorAll<HTMLElement>(
    "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])",
  );
  for (const candidate of candidates) {
    const after = element.compareDocumentPosition(candidate) & Node.DOCUMENT_POSITION_FOLLOWING;
    if (after && !element.contains(candidate) && candidate.offsetParent !== null) {
      candidate.focus();
      return;
    }
  }
}

/** Puts text on the clipboard; false when the browser would not. ``fallback``: a field to select
 *  for the old way (a hidden one is made when none is given). */
export async function copyText(text: string, fallback?: HTMLInputElement | HTMLTextAreaElement): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Not allowed (no permission, no user gesture): try the old way.
  }
  const field = fallback ?? document.createElement("textarea");
  try {
    if (!fallback) {
      field.value = text;
      field.setAttribute("readonly", "");
      field.style.position = "fixed";
      field.style.opacity = "0";
      document.body.append(field);
    }
    field.focus();
    field.select();
    return document.execCommand("copy");
  } catch {
    return false;
  } finally {
    if (!fallback) field.remove();
  }
}

/** Save ``text`` as a Python file the browser downloads. */
export function downloadText(text: string, name: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/x-python" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name.endsWith(".py") ? name : `${name}.py`;
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}
