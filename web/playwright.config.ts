import { defineConfig } from '@playwright/test';

// Drives Debian's /usr/bin/chromium (no browser download); serves the production build.
const port = Number(process.env.PORT ?? 4173);
/** The static server of tests/static-server.mjs (the deployed site). */
const sitePort = Number(process.env.SITE_PORT ?? 4174);

export default defineConfig({
  testDir: './tests',
  testMatch: '*.e2e.ts',
  outputDir: './test-results',
  timeout: 30_000,
  retries: 0,
  workers: 1,
  reporter: process.env.CI ? [['list'], ['html', { outputFolder: 'playwright-report', open: 'never' }]] : 'list',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1400, height: 1000 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    {
      command: `node ../node_modules/vite/bin/vite.js preview --config vite.config.ts --host 127.0.0.1 --port ${port} --strictPort`,
      cwd: import.meta.dirname,
      url: `http://127.0.0.1:${port}/`,
      reuseExistingServer: !process.env.CI,
      timeout: 30_000,
    },
    {
      // The site as deployed: under /servesim/, precompressed files, immutable assets
      // (embed.e2e.ts), and host pages on another origin.
      command: `node tests/static-server.mjs ${sitePort}`,
      cwd: import.meta.dirname,
      url: `http://127.0.0.1:${sitePort}/servesim/`,
      reuseExistingServer: !process.env.CI,
      timeout: 30_000,
    },
  ],
});
