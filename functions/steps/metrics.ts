import { metricsOfEvents, toolDimension } from '../core/metric-names';
import type { Deps } from '../core/ports';
import type { TraceEvent } from '../core/trace';

/**
 * Counts what a committed write's events stand for, under the tool's name only when it is registered (a
 * refused call's name is the agent's to choose: core/metric-names.ts). A metrics failure never fails the
 * step that wrote.
 */
export function countTrace(deps: Pick<Deps, 'metrics'> & { tools?: Deps['tools'] }, toolName: string, events: readonly TraceEvent[]): void {
  if (!deps.metrics || !events.length) return;
  try {
    const samples = metricsOfEvents(
      toolDimension(toolName, (name) => deps.tools?.has(name) === true),
      events,
    );
    if (!samples.length) return;
    if (deps.metrics.countAll) deps.metrics.countAll(samples);
    else for (const m of samples) deps.metrics.count(m.name, m.dimensions, m.value);
  } catch {
    // Why silent: the write is committed and the trace holds the truth; a lost count is not worth a retry.
  }
}
