import type { Deps, Store } from '../../functions/core/ports';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { idleLifecycle } from '../../functions/adapters/memory-store';

export { idleLifecycle, memoryStore } from '../../functions/adapters/memory-store';

/**
 * The dependencies of the pure core for a test that drives the steps itself: the store in memory, the given
 * tools, one agent allowed every tool, a clock and a fixed random source.
 */
export function coreDeps(store: Store, tools: ToolSpec[], clock: () => number): Deps {
  return {
    store,
    tools: makeRegistry(tools),
    config: async () => ({
      principals: [{ id: 'agent', key: 'k'.repeat(16), roles: ['agent'], tools: '*' }],
      approvalSecret: 's'.repeat(32),
      approvalTtlSeconds: 600,
    }),
    lifecycle: idleLifecycle,
    notifier: { approvalRequested: async () => undefined },
    now: clock,
    random: () => 0.5,
    publicBaseUrl: 'http://runner',
  };
}
