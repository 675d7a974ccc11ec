import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { canonicalJson } from '../../functions/core/canonical';
import { checkOutput } from '../../functions/core/classify';
import type { ToolSpec } from '../../functions/core/tool-spec';

/**
 * Whatever a tool returns, output checking ends quickly with an outcome and never throws: plain JSON is
 * recorded as its canonical JSON; anything JSON cannot carry or that is too large is `invalid_output`.
 * FUZZ_SEED repeats a run; FUZZ_OUTPUT_RUNS asks for more.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_202);
const RUNS = Math.max(1, Number(process.env.FUZZ_OUTPUT_RUNS ?? 2_000));

const spec = (risk: ToolSpec['risk']): ToolSpec => ({
  name: 'fuzzed',
  description: 'fuzzed',
  inputSchema: z.object({}),
  outputSchema: z.any(),
  risk,
  timeoutMs: 1_000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  execute: async () => undefined,
});

/**
 * Outputs that are cut off only at the 5 MiB bound (about a second of work each here): each checked once,
 * not among the fuzzed cases.
 */
const largeHazards: Record<string, (value: unknown) => unknown> = {
  shared: (value) => {
    let v: unknown = value ?? 'x';
    for (let i = 0; i < 60; i++) v = [v, v];
    return v;
  },
  sparse: (value) => {
    const a: unknown[] = [value];
    a.length = 2 ** 32 - 1;
    return a;
  },
  bigString: () => ({ text: 'x'.repeat(6 * 1024 * 1024) }),
};

/** Ways a tool's output can hurt a serializer, each applied to a generated value. */
const hazards: Record<string, (value: unknown) => unknown> = {
  cycle: (value) => {
    const o: Record<string, unknown> = { value };
    o.again = [o];
    return o;
  },
  bigint: (value) => ({ value, n: BigInt(7) }),
  deep: (value) => {
    let v = value;
    for (let i = 0; i < 10_000; i++) v = { v };
    return v;
  },
  throwingGetter: (value) => ({
    value,
    get boom() {
      throw new Error('getter');
    },
  }),
  throwingToJSON: (value) => ({
    value,
    toJSON: () => ({
      inner: {
        toJSON: () => {
          throw new Error('toJSON');
        },
      },
    }),
  }),
  proxy: (value) =>
    new Proxy(
      { value },
      {
        ownKeys: () => {
          throw new Error('ownKeys');
        },
      },
    ),
};

describe('tool outputs, fuzzed', () => {
  it.each(Object.keys(largeHazards))('%s: invalid_output within seconds', (name) => {
    const started = performance.now();
    expect(checkOutput(spec('read'), largeHazards[name]({ a: 1 }))).toMatchObject({ kind: 'failed_permanent', code: 'invalid_output' });
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it(`${RUNS} seeded outputs (seed ${SEED}): plain JSON recorded canonically, hazards invalid_output, nothing thrown or slow`, () => {
    const counts: Record<string, number> = {};
    const plain = fc.jsonValue({ maxDepth: 5 });
    const odd = fc.anything({
      maxDepth: 4,
      withBigInt: true,
      withMap: true,
      withSet: true,
      withDate: true,
      withTypedArray: true,
      withSparseArray: true,
      withNullPrototype: true,
      withBoxedValues: true,
    });
    fc.assert(
      fc.property(
        fc.oneof(
          plain.map((value) => ({ kind: 'plain', value })),
          odd.map((value) => ({ kind: 'anything', value })),
          fc.tuple(fc.constantFrom(...Object.keys(hazards)), plain).map(([h, value]) => ({ kind: h, value: hazards[h](value) })),
        ),
        fc.constantFrom<ToolSpec['risk']>('read', 'irreversible_write'),
        ({ kind, value }, risk) => {
          const started = performance.now();
          const outcome = checkOutput(spec(risk), value);
          const took = performance.now() - started;
          expect(took, `${kind} took ${took} ms`).toBeLessThan(20_000);
          const label = `${kind}:${outcome.kind}${'code' in outcome ? `/${outcome.code}` : ''}`;
          counts[label] = (counts[label] ?? 0) + 1;
          if (kind === 'plain') {
            expect(outcome.kind).toBe('succeeded');
            if (outcome.kind === 'succeeded') expect(outcome.result!.json).toBe(canonicalJson(value));
          } else if (kind in hazards) {
            expect(outcome).toMatchObject({ kind: risk === 'read' ? 'failed_permanent' : 'outcome_unknown', code: 'invalid_output' });
          } else if (outcome.kind === 'succeeded') {
            // Whatever fc.anything made, if it was recorded it is JSON text that parses back.
            expect(() => JSON.parse(outcome.result!.json!)).not.toThrow();
          } else {
            expect(outcome).toMatchObject({ code: 'invalid_output' });
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`tool output fuzz (seed ${SEED}, ${RUNS} cases): ${JSON.stringify(counts)}`);
  }, 120_000);
});
