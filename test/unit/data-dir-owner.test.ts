import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ownerAlive } from '../../local/data-dir-owner';

/** Polls until `check` holds, failing after `ms` (a busy machine only makes it slower). */
async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function state(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

describe.runIf(process.platform === 'linux')("a data directory's recorded owner", () => {
  it('is gone once only its zombie is left (killed, never reaped), and alive while it runs', async () => {
    // `sleep 0` exits at once; its parent becomes `sleep 60`, which never reaps it: a zombie with a live pid.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      let out = '';
      parent.stdout.on('data', (c: Buffer) => (out += c.toString()));
      await until('the child pid', () => out.includes('\n'));
      const zombiePid = Number(out.trim());
      await until('the child to be a zombie', () => state(zombiePid) === 'Z');
      await until('the parent to exec sleep', () => readFileSync(`/proc/${parent.pid}/cmdline`, 'utf8').startsWith('sleep'));

      const since = new Date().toISOString();
      expect(() => process.kill(zombiePid, 0)).not.toThrow(); // what the check used to trust
      expect(ownerAlive({ pid: zombiePid, command: 'sleep 0', startedAt: since })).toBe(false);
      expect(ownerAlive({ pid: parent.pid!, command: 'sleep 60', startedAt: since })).toBe(true);
      // A reused pid running something else is not the owner either.
      expect(ownerAlive({ pid: parent.pid!, command: 'node --import tsx local/main.ts', startedAt: since })).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  }, 60_000);
});
