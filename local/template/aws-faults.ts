import { z } from 'zod';
import { seeded } from '../seeded';

/** The behaviours of AWS template mode can inject (`TOOLRUNNER_AWS_FAULTS`, a comma list). */
export const AWS_FAULTS = ['duplicate-delivery', 'throttle', 'cold-start', 'eventual-reads'] as const;
export type AwsFault = (typeof AWS_FAULTS)[number];
/** The ones this version emulates; the others are refused by name rather than silently ignored. */
const EMULATED: readonly AwsFault[] = ['duplicate-delivery'];

export interface AwsFaults {
  enabled: ReadonlySet<AwsFault>;
  seed: number;
  /** `duplicate-delivery`: runs `deliver` a second time 0–2 s later (seeded), as AWS's at-least-once delivery may. */
  deliverAgain(what: string, deliver: () => Promise<unknown>): void;
  /** Second deliveries made so far. */
  readonly duplicatesDelivered: number;
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

/** The faults the environment asks for, validated: an unknown name, or one not emulated yet, is an error. */
export function awsFaultsFromEnv(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = console.error): AwsFaults {
  const parsed = FaultList.safeParse(env.TOOLRUNNER_AWS_FAULTS);
  if (!parsed.success)
    throw new Error(`TOOLRUNNER_AWS_FAULTS: each of ${AWS_FAULTS.join(', ')}, comma-separated (got ${env.TOOLRUNNER_AWS_FAULTS})`);
  const missing = parsed.data.filter((f) => !EMULATED.includes(f));
  if (missing.length) throw new Error(`TOOLRUNNER_AWS_FAULTS: ${missing.join(', ')} not emulated yet (emulated: ${EMULATED.join(', ')})`);
  const seed = z.coerce.number().int().default(1).parse(env.TOOLRUNNER_AWS_FAULTS_SEED);
  const random = seeded(seed);
  const enabled = new Set(parsed.data);
  let duplicates = 0;
  return {
    enabled,
    seed,
    deliverAgain(what, deliver) {
      if (!enabled.has('duplicate-delivery')) return;
      duplicates += 1;
      setTimeout(
        () => {
          deliver().catch((error: Error) =>
            log(`aws fault duplicate-delivery: the second delivery of ${what} failed: ${error.name}: ${error.message}`),
          );
        },
        Math.floor(random() * 2000),
      ).unref();
    },
    get duplicatesDelivered() {
      return duplicates;
    },
  };
}
