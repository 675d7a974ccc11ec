import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { StackOptions } from '../../local/stack';

const ENTRY = fileURLToPath(new URL('./stack-process-main.ts', import.meta.url));
const OPTIONS_ENV = 'TOOLRUNNER_TEST_STACK_OPTIONS';

/**
 * An embedded stack in a child process of its own (its own memory, engine and sandbox), started with these
 * options, once it serves requests. Stopping it removes its data directory.
 */
export async function startStackProcess(options: StackOptions): Promise<{ apiUrl: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, [OPTIONS_ENV]: JSON.stringify(options) },
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(options.dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    const ready = output.match(/ready: api=(\S+)/);
    if (ready) return { apiUrl: ready[1], stop };
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`the second stack process did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** In the child: parse the options, start the stack, print `ready:`, stop cleanly on SIGTERM. */
export async function runStackProcess(): Promise<void> {
  const { startStack } = await import('../../local/stack');
  const stack = await startStack(JSON.parse(process.env[OPTIONS_ENV] ?? '{}') as StackOptions);
  process.once('SIGTERM', () => {
    void stack.stop().then(() => process.exit(0));
  });
  console.log(`ready: api=${stack.apiUrl}`);
}
