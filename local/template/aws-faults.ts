import { z } from 'zod';
import { seeded } from '../seeded';

/** The behaviours of AWS template mode can inject (`TOOLRUNNER_AWS_FAULTS`, a comma list). */
export const AWS_FAULTS = ['duplicate-delivery', 'throttle', 'cold-start', 'eventual-reads'] as const;
export type AwsFault = (typeof AWS_FAULTS)[number];

/** `throttle`: one Step Functions or Lambda API call in this many is refused. */
const THROTTLE_ONE_IN = 10;
/** `cold-start`: what a new instance adds before its first invocation. */
const COLD_START_MS = { min: 300, max: 1_500 } as const;
/** `eventual-reads`: how late an eventually consistent read may see a write. */
export const READ_LAG_MAX_MS = 1_000;

export interface AwsFaults {
  enabled: ReadonlySet<AwsFault>;
  seed: number;
  /** `duplicate-delivery`: runs `deliver` a second time 0–2 s later (seeded), as AWS's at-least-once delivery may. */
  deliverAgain(what: string, deliver: () => Promise<unknown>): void;
  /** `throttle`: whether this API call is refused (`ThrottlingException` / `TooManyRequestsException`), one in ten. */
  throttles(): boolean;
  /** `cold-start`: the extra milliseconds a new instance waits before its first invocation (0 without the fault). */
  coldStartDelayMs(): number;
  /** `eventual-reads`: how late this eventually consistent read sees writes (0 without the fault). */
  readLagMs(): number;
  /** What the faults did so far. */
  readonly counts: { duplicatesDelivered: number; throttled: number; coldStarts: number; staleReads: number };
  /** An eventually consistent read answered with an older image. */
  countStaleRead(): void;
}

const FaultList = z
  .string()
  .optional()
  .transform((text) =>
    (text ?? '')
      .split(',')
      .map((f) => f.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.enum(AWS_FAULTS)));

/** The faults the environment asks for, validated: an unknown name is an error, not silently ignored. */
export function awsFaultsFromEnv(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = console.error): AwsFaults {
  const parsed = FaultList.safeParse(env.TOOLRUNNER_AWS_FAULTS);
  if (!parsed.success)
    throw new Error(`TOOLRUNNER_AWS_FAULTS: each of ${AWS_FAULTS.join(', ')}, comma-separated (got ${env.TOOLRUNNER_AWS_FAULTS})`);
  const seed = z.coerce.number().int().default(1).parse(env.TOOLRUNNER_AWS_FAULTS_SEED);
  // One stream per fault: enabling one does not shift what another decides for the same seed.
  const random = Object.fromEntries(AWS_FAULTS.map((f, i) => [f, seeded(seed * 4 + i)])) as Record<AwsFault, () => number>;
  const enabled = new Set(parsed.data);
  const counts = { duplicatesDelivered: 0, throttled: 0, coldStarts: 0, staleReads: 0 };
  return {
    enabled,
    seed,
    counts,
    deliverAgain(what, deliver) {
      if (!enabled.has('duplicate-delivery')) return;
      counts.duplicatesDelivered += 1;
      setTimeout(
        () => {
          deliver().catch((error: Error) =>
            log(`aws fault duplicate-delivery: the second delivery of ${what} failed: ${error.name}: ${error.message}`),
          );
        },
        Math.floor(random['duplicate-delivery']() * 2000),
      ).unref();
    },
    throttles() {
      if (!enabled.has('throttle') || random.throttle() * THROTTLE_ONE_IN >= 1) return false;
      counts.throttled += 1;
      return true;
    },
    coldStartDelayMs() {
      if (!enabled.has('cold-start')) return 0;
      counts.coldStarts += 1;
      return COLD_START_MS.min + Math.floor(random['cold-start']() * (COLD_START_MS.max - COLD_START_MS.min));
    },
    readLagMs() {
      return enabled.has('eventual-reads') ? Math.floor(random['eventual-reads']() * READ_LAG_MAX_MS) : 0;
    },
    countStaleRead() {
      counts.staleReads += 1;
    },
  };
}
