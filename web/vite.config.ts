import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

const here = import.meta.dirname;

// `npm run build` at the repository root writes the static site (both pages) to web/dist/.
export default defineConfig({
  root: here,
  base: './',
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
