import { spawn, type ChildProcess } from 'node:child_process';

export interface NpmStarted {
  child: ChildProcess;
  output(): string;
  /** Signals the whole process group (npm, node and DynamoDB Local at once); resolves with npm's exit code. */
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
    signalGroup(signal) {
      const exited = new Promise<number | null>((r) => (alive() ? child.once('exit', (code) => r(code)) : r(child.exitCode)));
      process.kill(-child.pid!, signal);
      return exited;
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
