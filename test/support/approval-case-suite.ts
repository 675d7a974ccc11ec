import { afterAll, beforeAll, describe, it } from 'vitest';
import { ALL_BUDGETS, checkCase, describeRead, runCase, type Action, type CaseEnv, type CaseReport, type Framework } from './adapter-cases';
import type { TestStack } from './stack';
import { isEmbedded } from './target';

/**
 * The approval cases of one framework adapter as Vitest tests: approve, reject and cancel in both modes and
 * budgets, and, where the test owns the stack's config, an approval nobody decides. Each logs what the model
 * read once the suite ends.
 */
export function approvalCaseSuite(framework: Framework, stack: () => TestStack, env: (action: Action) => CaseEnv): void {
  const reports: CaseReport[] = [];
  const cases = (actions: readonly Action[]) =>
    (['pause', 'blocking'] as const).flatMap((mode) =>
      ALL_BUDGETS.flatMap((budget) => actions.map((action) => ({ mode, budget, action }))),
    );
  afterAll(() => console.log(`${process.env.TOOLRUNNER_SDK_VERSIONS}: what the model read\n${reports.map(describeRead).join('\n')}`));
  const each = (actions: readonly Action[]) =>
    it.concurrent.each(cases(actions))(
      '$mode, $budget budget: $action',
      async ({ mode, budget, action }) => {
        const report = await runCase(env(action), { framework, mode, budget, action });
        reports.push(report);
        checkCase(report);
      },
      180_000,
    );

  each(['approve', 'reject', 'cancel']);
  describe.runIf(isEmbedded)('an approval nobody decides', () => {
    // A short approval time for these cases only; the teardown puts the day back.
    beforeAll(() => {
      stack().editConfig((c) => (c.approvalTtlSeconds = 3));
      return () => stack().editConfig((c) => (c.approvalTtlSeconds = 86400));
    });
    each(['expire']);
  });
}
