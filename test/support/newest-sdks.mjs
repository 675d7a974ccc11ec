// Loaded with `node --import`: the newest SDKs (the aliased dev dependencies `ai-newest`, `openai-agents-newest`)
// answer for `ai` and `@openai/agents`, as vitest's `newest-sdks` project aliases them, in a process of its own.
import { register } from 'node:module';

const hooks = `
const aliases = [[/^ai$/, 'ai-newest'], [/^ai\\/(.*)$/, 'ai-newest/$1'], [/^@openai\\/agents$/, 'openai-agents-newest']];
export async function resolve(specifier, context, next) {
  for (const [pattern, target] of aliases) if (pattern.test(specifier)) return next(specifier.replace(pattern, target), context);
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
