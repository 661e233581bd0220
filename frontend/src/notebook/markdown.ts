// A Markdown cell as the page shows it, rendered the way the site renders a description
// (snippets/markdown.py): CommonMark's common parts, no raw HTML (shown as text), no images (a
// request to another site), links only to http(s), mailto and this site, each `nofollow`. Built
// as DOM nodes from text nodes: nothing a person wrote is ever parsed as markup.
import { el } from "../dom";

const SAFE_LINK = /^(https?:|mailto:|\/|#)/i;

/** The rendered cell: block elements, in order. */
export function renderMarkdown(source: string): Node[] {
  const out: Node[] = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length) out.push(el("p", null, ...inline(paragraph.join("\n").trim())));
    paragraph = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^ {0,3}(```+|~~~+)\s*([\w+-]*)/.exec(line);
    if (fence) {
      endParagraph();
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const code = el("code", null, body.join("\n"));
      if (fence[2]) code.dataset.lang = fence[2];
      out.push(el("pre", null, code));
      continue;
    }
    const heading = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      endParagraph();
      // The page's own headings are h1 (the title) and h2 (the cells): a cell's start at h3.
      const level = Math.min(6, heading[1].length + 2) as 3 | 4 | 5 | 6;
      out.push(el(`h${level}`, null, ...inline(heading[2])));
      i++;
      continue;
    }
    if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      endParagraph();
      out.push(el("hr"));
      i++;
      continue;
    }
    if (/^ {0,3}>/.test(line)) {
      endParagraph();
      const body: string[] = [];
      while (i < lines.length && /^ {0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^ {0,3}> ?/, ""));
      out.push(el("blockquote", null, ...renderMarkdown(body.join("\n"))));
      continue;
    }
    const item = /^ {0,3}([-*+]|\d{1,9}[.)])\s+/.exec(line);
    if (item) {
      endParagraph();
      const ordered = /\d/.test(item[1]);
      const list = el(ordered ? "ol" : "ul");
      if (ordered && parseInt(item[1], 10) !== 1) (list as HTMLOListElement).start = parseInt(item[1], 10);
      while (i < lines.length) {
        const m = /^ {0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
        if (!m || /\d/.test(m[1]) !== ordered) break;
        const body = [m[2]];
        i++;
        // Its continuation lines: indented, or a plain line straight after it.
        while (i < lines.length && lines[i].trim() && !/^ {0,3}([-*+]|\d{1,9}[.)])\s+/.test(lines[i])) {
          body.push(lines[i++].trim());
        }
        list.append(el("li", null, ...inline(body.join("\n"))));
      }
      out.push(list);
      continue;
    }
    if (!line.trim()) {
      endParagraph();
      i++;
      continue;
    }
    paragraph.push(line);
    i++;
  }
  endParagraph();
  return out;
}

/** Inline Markdown: code spans, links, strong and emphasis; everything else is text. */
export function inline(text: string): Node[] {
  const nodes: Node[] = [];
  let plain = "";
  const flush = () => {
    if (plain) nodes.push(document.createTextNode(plain));
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    const rest = text.slice(i);
    if (ch === "\\" && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (ch === "`") {
      const ticks = /^`+/.exec(rest)![0];
      const end = text.indexOf(ticks, i + ticks.length);
      if (end > 0) {
        flush();
        nodes.push(el("code", null, text.slice(i + ticks.length, end).replace(/\n/g, " ").trim()));
        i = end + ticks.length;
        continue;
      }
    }
    if (ch === "[" || (ch === "!" && text[i + 1] === "[")) {
      // The destination may hold balanced parentheses (CommonMark): all of it is the link's.
      const link = /^!?\[([^\]]*)\]\(\s*<?((?:[^\s()<>]|\([^\s()<>]*\))*)>?(?:\s+"[^"]*")?\s*\)/.exec(rest);
      if (link) {
        flush();
        // An image is shown as its words (no request to where it lives), as the site does.
        const [, label, href] = link;
        if (ch === "!" || !SAFE_LINK.test(href)) {
          nodes.push(...inline(label));
        } else {
          const a = el("a", null, ...inline(label));
          a.href = href;
          a.rel = "nofollow noopener";
          if (/^https?:/i.test(href)) a.target = "_blank";
          nodes.push(a);
        }
        i += link[0].length;
        continue;
      }
    }
    if (ch === "<") {
      const auto = /^<(https?:\/\/[^\s<>]+)>/.exec(rest);
      if (auto) {
        flush();
        const a = el("a", null, auto[1]);
        a.href = auto[1];
        a.rel = "nofollow noopener";
        a.target = "_blank";
        nodes.push(a);
        i += auto[0].length;
        continue;
      }
    }
    if (ch === "*" || ch === "_") {
      const strong = new RegExp(`^\\${ch}\\${ch}(?=\\S)([\\s\\S]*?\\S)\\${ch}\\${ch}`).exec(rest);
      if (strong) {
        flush();
        nodes.push(el("strong", null, ...inline(strong[1])));
        i += strong[0].length;
        continue;
      }
      const em = new RegExp(`^\\${ch}(?=\\S)([\\s\\S]*?\\S)\\${ch}`).exec(rest);
      const wordInside = ch === "_" && /\w/.test(text[i - 1] ?? "");
      if (em && !wordInside) {
        flush();
        nodes.push(el("em", null, ...inline(em[1])));
        i += em[0].length;
        continue;
      }
    }
    if (ch === "\n") {
      // Two spaces (or a backslash) before a newline break the line; otherwise it is a space.
      if (plain.endsWith("  ")) {
        plain = plain.trimEnd();
        flush();
        nodes.push(el("br"));
      } else {
        plain += " ";
      }
      i++;
      continue;
    }
    plain += ch;
    i++;
  }
  flush();
  return nodes;
}
