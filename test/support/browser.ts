import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium (never a downloaded browser); `.ci/run` installs it when missing. The one place that names it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const inCi = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Whether the browser tests skip: only outside CI and only when Chromium is missing, with a notice that says
 * how to get it. In CI (`CI=true`, as `.ci/run` sets) they never skip: a missing Chromium fails them.
 */
export const skipBrowserTests = !inCi && !existsSync(CHROMIUM);
if (skipBrowserTests)
  console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH); CI requires it`);

/**
 * Headless Chromium as the browser tests use it: no sandbox (root), no GPU, and none of the background
 * networking a closed machine refuses. Playwright gives each launch a fresh temporary profile.
 */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Where a browser test's screenshots go for a person to look at: `SCREENSHOT_DIR`, else `test-results/screenshots/`
 * in the repo (gitignored), one directory per test file and target.
 */
export function screenshotDir(group: string): string {
  const dir = join(process.env.SCREENSHOT_DIR ?? join(import.meta.dirname, '..', '..', 'test-results', 'screenshots'), group);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A full-page screenshot of `page` as `<dir>/<name>.png`. */
export async function screenshot(dir: string, page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}
