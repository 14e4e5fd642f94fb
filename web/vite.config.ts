import { cpSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join, normalize, resolve } from 'node:path';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

const here = import.meta.dirname;

/**
 * The measured-kernel data (`data/ais/` of the repository: the index, the bundled model
 * configs, one file per GPU × framework × version) published beside the pages as
 * `data/ais/`: copied into the build, served from the repository by the dev server. The
 * page fetches only the files a scenario needs (web/src/engine/kernel-data.ts).
 */
function measuredKernelData(): Plugin {
  const src = resolve(here, '..', 'data', 'ais');
  return {
    name: 'servesim-measured-kernel-data',
    configureServer(server) {
      server.middlewares.use('/data/ais/', (req, res, next) => {
        const name = normalize(decodeURIComponent((req.url ?? '').split('?')[0] ?? '')).replace(/^[/\\]+/, '');
        const file = join(src, name);
        if (name.startsWith('..') || !existsSync(file) || !statSync(file).isFile()) return next();
        res.setHeader('Content-Type', name.endsWith('.json') ? 'application/json' : 'application/zip');
        res.end(readFileSync(file));
      });
    },
    writeBundle(options) {
      if (options.dir) cpSync(src, join(options.dir, 'data', 'ais'), { recursive: true });
    },
  };
}

// `npm run build` at the repository root writes the static site (both pages) to web/dist/.
export default defineConfig({
  root: here,
  base: './',
  plugins: [measuredKernelData()],
  build: {
    outDir: resolve(here, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: {
      input: {
        index: resolve(here, 'index.html'),
        embed: resolve(here, 'embed.html'),
      },
    },
  },
  worker: { format: 'es' },
  server: { fs: { allow: [here] } },
  test: {
    root: here,
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
