// Bundles web/src into internal/ui/dist (see docs/ui.md). The output is
// committed and must be a pure function of the sources and the lockfile:
// scripts/ui-check.sh rebuilds it and fails on any difference. So: fixed
// options, content-hashed file names, no timestamps, no source maps (they
// would embed absolute paths), and the directory emptied first so a renamed
// chunk leaves nothing stale behind.
import * as esbuild from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'internal', 'ui', 'dist');

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { app: 'src/main.ts', style: 'src/style.css' },
  outdir: join(out, 'assets'),
  bundle: true,
  splitting: true, // each page is a dynamic import: its own chunk
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  charset: 'utf8',
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});

// Output paths relative to dist, with forward slashes.
const rel = (p) => relative(out, join(here, p)).split('\\').join('/');
const outputs = result.metafile.outputs;
const byEntry = {};
for (const [file, o] of Object.entries(outputs)) {
  if (o.entryPoint) byEntry[o.entryPoint] = file;
}
const app = byEntry['src/main.ts'];
const css = byEntry['src/style.css'];
if (!app || !css) throw new Error('build: entry outputs missing');

// The files a page needs: the shell, the stylesheet, the page's chunk and
// everything those import statically.
function closure(file, seen = new Set()) {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const imp of outputs[file].imports) {
    if (imp.kind === 'import-statement' && outputs[imp.path]) closure(imp.path, seen);
  }
  return seen;
}
const pages = {};
for (const name of ['query', 'explore', 'sensors', 'graphite', 'cache', 'bucket', 'status']) {
  const chunk = byEntry[`src/pages/${name}.ts`];
  if (!chunk) throw new Error(`build: no chunk for page ${name}`);
  const files = closure(chunk, closure(app));
  files.add(css);
  pages[name] = ['index.html', ...[...files].map(rel).sort()];
}

const index = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('%STYLE%', '/' + rel(css))
  .replace('%APP%', '/' + rel(app));
writeFileSync(join(out, 'index.html'), index);
// Read by internal/ui's size test; not served.
writeFileSync(join(out, 'pages.json'), JSON.stringify(pages, null, 2) + '\n');
