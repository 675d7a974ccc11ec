import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

export interface NpmStarted {
  child: ChildProcess;
  output(): string;
  /**
   * Signals the whole process group (npm, node and DynamoDB Local at once); resolves with npm's exit code, after a
   * SIGKILL once no member of the group is left running.
   */
  signalGroup(signal: NodeJS.Signals): Promise<number | null>;
  alive(): boolean;
}

/**
 * `npm start` in its own process group with these knobs added to the environment, once it prints `ready:`. `command` is
 * what runs instead of `npm start` (the bench runs the node command it execs, with V8 flags NODE_OPTIONS refuses);
 * it must print `ready:` within `readyWithinMs`.
 */
export async function npmStart(
  env: Record<string, string>,
  { readyWithinMs = 90_000, command = ['npm', 'start'] }: { readyWithinMs?: number; command?: readonly string[] } = {},
): Promise<NpmStarted> {
  let output = '';
  const child = spawn(command[0], command.slice(1), {
    cwd: process.cwd(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const started: NpmStarted = {
    child,
    output: () => output,
    alive,
    async signalGroup(signal) {
      const exited = new Promise<number | null>((r) => (alive() ? child.once('exit', (code) => r(code)) : r(child.exitCode)));
      process.kill(-child.pid!, signal);
      const code = await exited;
      // npm exits before the node it runs and DynamoDB Local are torn down; a restart must not meet them.
      if (signal === 'SIGKILL') await groupGone(child.pid!);
      return code;
    },
  };
  const deadline = Date.now() + readyWithinMs;
  while (!output.includes('ready: api=')) {
    if (Date.now() > deadline || !alive()) {
      if (alive()) await started.signalGroup('SIGKILL');
      throw new Error(`npm start did not become ready:\n${output}`);
    }
    // Short polls: the bench times `npm start` to `ready:` with this.
    await new Promise((r) => setTimeout(r, 20));
  }
  return started;
}

/** Waits until no process of the group is running (zombies, dead but not reaped, count as gone); Linux's /proc only. */
async function groupGone(pgid: number, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (runningMembers(pgid) > 0) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still runs ${withinMs} ms after SIGKILL`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function runningMembers(pgid: number): number {
  if (!existsSync('/proc/self/stat')) return 0;
  let running = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // After the command's closing parenthesis: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') running++;
  }
  return running;
}
