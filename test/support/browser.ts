import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { describe } from 'vitest';
import { inCi, skipNotice } from './prerequisites';

/** Debian's Chromium (never a downloaded browser); `.ci/run` installs it when missing. The one place tests name it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const missing = !existsSync(CHROMIUM);
const INSTALL = 'apt-get install -y chromium (.ci/run does this)';

const skipped = missing && !inCi;
if (skipped) console.warn(skipNotice(CHROMIUM, 'the browser tests', INSTALL));

/**
 * `describe` for tests that drive Chromium. Outside CI, with no Chromium, the suite is skipped (and its
 * file's hooks with it, so no stack starts) after the notice above; in CI it runs, and `launchChromium` fails.
 */
export const describeWithChromium = describe.skipIf(skipped);

/**
 * Headless Chromium as the browser tests use it: no sandbox (root), no GPU, and none of the background
 * networking a closed machine refuses. Playwright gives each launch a fresh temporary profile.
 */
export function launchChromium(): Promise<Browser> {
  if (missing) throw new Error(`${CHROMIUM} is missing: ${INSTALL}`);
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
