/**
 * Builds the console (docs/console.md) into console/dist: hashed assets under assets/, served by the
 * server at /console/, each with gzip and brotli copies the server hands to clients that accept them.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import preact from '@preact/preset-vite';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const outDir = join(root, 'dist');

/** Writes name.gz and name.br beside every text file of the build. */
function precompress(): Plugin {
  return {
    name: 'thingbase-precompress',
    apply: 'build',
    closeBundle() {
      for (const entry of readdirSync(outDir, { recursive: true })) {
        const file = join(outDir, String(entry));
        if (!/\.(js|css|html|svg)$/.test(file)) continue;
        const bytes = readFileSync(file);
        writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
        writeFileSync(`${file}.br`, brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
      }
    },
  };
}

export default defineConfig({
  root,
  base: '/console/',
  plugins: [preact(), precompress()],
  logLevel: 'warn',
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    // Nothing inlined as data: URLs or inline scripts: the Content-Security-Policy allows neither.
    assetsInlineLimit: 0,
  },
});
