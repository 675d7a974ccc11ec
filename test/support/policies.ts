import type { RunnerConfig } from '../../functions/core/config';
import type { TestStack } from './stack';

/**
 * Sets the stack's policies (undefined: none) with any other config `edit`, and waits until the runner decides
 * by them: the first policy's `@id` shows in a preview's determining ids (with none, no ids show).
 */
export async function usePolicies(
  stack: TestStack,
  policies: string | undefined,
  edit: (config: RunnerConfig) => void = () => {},
): Promise<void> {
  stack.editConfig((config) => {
    if (policies === undefined) delete config.policies;
    else config.policies = policies;
    edit(config);
  });
  const runId = await stack.api.createRun(stack.keys.agent);
  const marker = policies && /@id\("([^"]+)"\)/.exec(policies)![1];
  await stack.api.until(
    'the policies to be loaded',
    async () =>
      (
        await stack.api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
          key: stack.keys.agent,
          body: { name: 'get_order', arguments: { orderId: 'ord_1' } },
        })
      ).body,
    (body) => (marker ? JSON.stringify(body.policies ?? {}).includes(marker) : body.policies === undefined),
  );
}
