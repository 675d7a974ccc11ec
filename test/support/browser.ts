import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
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
