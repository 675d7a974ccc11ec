import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { Telemetry } from '../core/ports';
import { endAttributes, GEN_AI_NAMES, type SpanAttributeValue, startAttributes } from '../core/span-attributes';

/** X-Ray annotations take letters, digits and underscores only: `gen_ai.tool.name` becomes `gen_ai_tool_name`. */
const annotationKey = (key: string) => key.replace(/[^A-Za-z0-9_]/g, '_');

/**
 * The attempt span on AWS: an `execute_tool <tool>` subsegment of the Lambda's X-Ray segment (Powertools
 * tracer), annotated with the same attributes as the OpenTelemetry span, so X-Ray can be searched by them.
 */
export function xrayTelemetry(tracer: Tracer): Telemetry {
  return {
    async attemptSpan(start, attempt, end) {
      const parent = tracer.isTracingEnabled() ? tracer.getSegment() : undefined;
      if (!parent) return attempt();
      const sub = parent.addNewSubsegment(`${GEN_AI_NAMES.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${start.toolName}`);
      tracer.setSegment(sub);
      // An annotation holds one string, number or boolean: a list (the policy ids) is joined with commas.
      const annotate = (attrs: Record<string, SpanAttributeValue>) => {
        for (const [key, value] of Object.entries(attrs))
          sub.addAnnotation(annotationKey(key), Array.isArray(value) ? value.join(',') : value);
      };
      annotate(startAttributes(start));
      try {
        const result = await attempt();
        const finished = end(result);
        annotate(endAttributes(finished));
        if (finished.outcome.kind !== 'succeeded') sub.addErrorFlag();
        return result;
      } catch (error) {
        sub.addErrorFlag();
        throw error;
      } finally {
        sub.close();
        tracer.setSegment(parent);
      }
    },
  };
}

/** Both telemetries for one attempt: X-Ray outside (the Lambda's trace), OpenTelemetry inside. */
export function bothTelemetries(outer: Telemetry, inner: Telemetry): Telemetry {
  return { attemptSpan: (start, attempt, end) => outer.attemptSpan(start, () => inner.attemptSpan(start, attempt, end), end) };
}
