// Bundles the extension with esbuild (dist/extension.js) and, with --tests, compiles the unit
// tests (src/test/unit/*.test.ts) to out/test/unit/*.test.js for `node --test`.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

await esbuild.build({
  entryPoints: [join(root, 'src/extension.ts')],
  bundle: true,
  outfile: join(root, 'dist/extension.js'),
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});

if (tests) {
  const dir = join(root, 'src/test/unit');
  const entries = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
  await esbuild.build({
    entryPoints: entries,
    bundle: true,
    outdir: join(root, 'out/test/unit'),
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    // the unit tests cover src/core only, which never imports vscode; fail loudly if it does
    external: [],
    logLevel: 'warning',
  });
}
console.log(`build: dist/extension.js${tests ? ' and out/test/unit' : ''}${production ? ' (production)' : ''}`);
