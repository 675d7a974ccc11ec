import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { RunnerError } from '../functions/core/errors';

/**
 * One process owns a data directory at a time: DynamoDB Local's files, the sandbox's state and the blobs
 * would be corrupted by two, and a second start used to stop the first one's DynamoDB Local. The owner
 * records itself in `owner.json`; a directory whose recorded owner is gone (a crash, SIGKILL) is taken
 * over, so crash recovery keeps working.
 */

const OWNER_FILE = 'owner.json';

const OwnerSchema = z.object({ pid: z.number().int().positive(), command: z.string(), startedAt: z.string() });
export type DataDirOwner = z.infer<typeof OwnerSchema>;

export class DataDirInUseError extends RunnerError {
  override name = 'DataDirInUseError';
  constructor(
    readonly dataDir: string,
    readonly owner: DataDirOwner,
  ) {
    super(
      `the data directory ${dataDir} is in use by process ${owner.pid} (${owner.command}, since ${owner.startedAt}); ` +
        'stop it first, or set TOOLRUNNER_DATA_DIR to another directory',
    );
  }
}

/** The owner file's content, or undefined when it is missing or unreadable (a crash mid-write counts as no owner). */
export function parseOwner(text: string | undefined): DataDirOwner | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = OwnerSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The command line of a live process, or undefined when no such process exists (or only its zombie does). */
function commandLineOf(pid: number): string | undefined {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive but not ours to signal; still alive.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    // The process vanished in between, or there is no /proc here (then trust the pid).
    return (error as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self') ? undefined : '';
  }
  // A SIGKILLed `npm start` whose parent died with it waits to be reaped by init, and in a container whose
  // init does not reap it stays a zombie for good: it still answers signal 0, but it is gone.
  if (zombie(stat)) return undefined;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return undefined; // exited in between
  }
}

/** `/proc/<pid>/stat`'s state (the field after the command's closing parenthesis) says dead or zombie. */
function zombie(stat: string): boolean {
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/** Is the recorded owner still the process that wrote it? A reused pid running something else is not. */
export function ownerAlive(owner: DataDirOwner, commandLine: (pid: number) => string | undefined = commandLineOf): boolean {
  if (owner.pid === process.pid) return false;
  const now = commandLine(owner.pid);
  if (now === undefined) return false;
  return now === '' || now === owner.command;
}

/**
 * Makes this process the directory's owner (creating it private, 0700, and making an existing one private),
 * or throws DataDirInUseError while the recorded owner lives. `release` removes the record if it is still ours.
 */
export function claimDataDir(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const file = join(dataDir, OWNER_FILE);
  const me: DataDirOwner = {
    pid: process.pid,
    command: commandLineOf(process.pid) || process.argv.join(' '),
    startedAt: new Date().toISOString(),
  };
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return {
        release() {
          const current = parseOwner(readOrUndefined(file));
          if (current?.pid === me.pid) rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = parseOwner(readOrUndefined(file));
    if (owner && ownerAlive(owner)) throw new DataDirInUseError(dataDir, owner);
    // The recorded owner is gone: take the directory over (crash recovery reads what it left).
    rmSync(file, { force: true });
  }
  throw new Error(`could not claim the data directory ${dataDir}: another process claimed it at the same moment`);
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The first of these ports that something already listens on (on 127.0.0.1, where the stack listens). */
export async function firstPortInUse(ports: { port: number; knob: string }[]): Promise<{ port: number; knob: string } | undefined> {
  for (const p of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(p.port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (!free) return p;
  }
  return undefined;
}
