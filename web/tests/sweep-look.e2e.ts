// Screenshots of the page with the Sweep panel, closed and open, at desktop and phone size,
// for looking at the layout (the behaviour is tested in sweep.e2e.ts).

import { expect, test } from '@playwright/test';
import { screenshot, waitRun } from './helpers';

for (const [name, size] of [
  ['desktop', { width: 1400, height: 1000 }],
  ['phone', { width: 390, height: 844 }],
] as const) {
  test(`the sweep panel at ${name} size: closed above the results, open with its fields, no sideways scrolling`, async ({ page }, info) => {
    await page.setViewportSize(size);
    await page.goto('/');
    await waitRun(page, 0);
    await screenshot(page, info, `sweep-closed-${name}.png`, false);
    await page.locator('#sweep > summary').click();
    await page.locator('#sweep-preset-workers').click();
    await expect(page.locator('#sweep-status')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
    await page.locator('#sweep').scrollIntoViewIfNeeded();
    await screenshot(page, info, `sweep-open-${name}.png`, false);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(sideways).toBeLessThanOrEqual(0);
  });
}
