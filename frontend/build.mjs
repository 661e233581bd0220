// Bundles the page into dist/, which Django serves at /static/ (WhiteNoise).
//
//   dist/app.js             the playground's page, a snippet's and the embed (src/pages/playground.ts;
//                           ESM, loaded with <script type="module">)
//   dist/app.css            the stylesheets the entry imports (src/styles/, workbench.css, panes/,
//                           the page's own), in import order, then Monaco's; the codicon font next to it
//   dist/editor.worker.js   Monaco's editor worker (a classic worker: see src/editor.ts)
//   dist/notebook.js/.css   a notebook's page (src/pages/notebook.ts: a cell is the playground's editor
//                           and result panes, one per cell)
//   dist/assignment.js/.css an assignment's page (src/pages/assignment.ts: the workbench, as app.js has it)
//   dist/courses.js/.css    the other course pages (src/pages/courses.ts: no editor)
//   dist/dashboard.js/.css  a course's live dashboard (src/pages/dashboard.ts)
//   dist/my-runs.js         My runs (src/pages/my-runs.ts: Cancel through the API; the account
//                           pages have no other script)
//   dist/monaco-nls.zh-cn.js
//                           Monaco's own words in Chinese (menus, the find widget...), copied from
//                           this Monaco's esm/vs/nls/lang/zh-cn.js: a classic script that sets
//                           globalThis._VSCODE_NLS_MESSAGES (looked up by index, so only this
//                           build's own file fits) and _VSCODE_NLS_LANGUAGE. A Chinese page loads it
//                           before its module, as Monaco reads them when its modules evaluate.
//
// `node build.mjs --watch` rebuilds on change; `--dev` skips minification.
import * as esbuild from "esbuild";
import { mkdir, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";

const args = new Set(process.argv.slice(2));
const watch = args.has("--watch");
const minify = !args.has("--dev") && !watch;
const outdir = "dist";

// monaco-vim and monaco-emacs import Monaco by the paths of releases before 0.56
// ("monaco-editor", "monaco-editor/esm/vs/..."); both must get the one editor API the page uses,
// not a second, whole copy of Monaco.
const monacoPaths = {
  name: "monaco-paths",
  setup(build) {
    // monaco-vim's "browser" build is a UMD bundle; its ES module imports Monaco as above.
    build.onResolve({ filter: /^monaco-vim$/ }, () => ({ path: path.resolve("node_modules/monaco-vim/dist/index.mjs") }));
    build.onResolve({ filter: /^monaco-editor(\/esm\/vs\/.*)?$/ }, (args) => {
      const rest = args.path.replace(/^monaco-editor(\/esm\/vs)?/, "");
      const target = rest === "" ? "monaco-editor/editor" : `monaco-editor${rest}`;
      return build.resolve(target, { kind: args.kind, resolveDir: args.resolveDir });
    });
  },
};

const common = {
  bundle: true,
  minify,
  sourcemap: minify ? false : "linked",
  target: ["es2022"],
  logLevel: "warning",
  legalComments: "none",
};

const builds = [
  {
    ...common,
    entryPoints: { app: "src/pages/playground.ts", assignment: "src/pages/assignment.ts", notebook: "src/pages/notebook.ts" },
    outdir,
    format: "esm",
    plugins: [monacoPaths],
    // The codicon font is referenced from Monaco's CSS; copied next to app.css with a content
    // hash so a long cache lifetime on /static/ stays correct.
    loader: { ".ttf": "file" },
    assetNames: "[name]-[hash]",
  },
  {
    // The course pages and My runs, without an editor: no Monaco in them.
    ...common,
    entryPoints: { courses: "src/pages/courses.ts", dashboard: "src/pages/dashboard.ts", "my-runs": "src/pages/my-runs.ts" },
    outdir,
    format: "esm",
  },
  {
    ...common,
    entryPoints: { "editor.worker": "monaco-editor/editor/editor.worker" },
    outdir,
    format: "iife",
  },
];

/** dist/monaco-nls.zh-cn.js, from the Monaco that the bundles hold. */
async function copyMonacoMessages() {
  const { version } = JSON.parse(await readFile("node_modules/monaco-editor/package.json", "utf8"));
  let text = await readFile("node_modules/monaco-editor/esm/vs/nls/lang/zh-cn.js", "utf8");
  if (!text.includes(`Version: ${version}`)) throw new Error(`zh-cn.js is not monaco-editor ${version}'s`);
  if (!text.includes("_VSCODE_NLS_LANGUAGE")) text += '\nglobalThis._VSCODE_NLS_LANGUAGE="zh-cn";\n';
  await mkdir(outdir, { recursive: true });
  await writeFile(path.join(outdir, "monaco-nls.zh-cn.js"), text);
}

await rm(outdir, { recursive: true, force: true });
await copyMonacoMessages();

if (watch) {
  for (const options of builds) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  }
  console.log(`watching src/ -> ${outdir}/`);
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
  for (const name of (await readdir(outdir, { recursive: true })).sort()) {
    const info = await stat(path.join(outdir, name));
    if (info.isFile()) console.log(`${name.padEnd(40)} ${(info.size / 1024).toFixed(1).padStart(8)} KiB`);
  }
}
