import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { PolicyConfig, PolicyEvaluator } from '../core/policy-schema';
import type { ToolRegistry } from '../core/tool-spec';
import { defaultLog, jsonLines } from '../core/log';

/**
 * The configuration's policies (`policies`, or the file `policiesFile` names), loaded into the engine once per
 * change of the text, the registered tools or the principals' attributes, not once per call. A text that fails
 * to parse or validate is logged once with its line and reason, and the last valid policies keep serving; with
 * none yet, every decision fails (closed) with that reason until the text is fixed.
 */
export function policySource(
  tools: ToolRegistry,
  options: {
    baseDir: string;
    /** A policy file set by the deployment (the construct's `policiesFile`, beside the bundle): it wins over the document's. */
    deployedFile?: string;
    log?: (line: string) => void;
  },
): (config: PolicyConfig) => Promise<PolicyEvaluator | undefined> {
  const log = () => (options.log ? jsonLines(options.log) : defaultLog());
  let last: { text: string; principals: unknown; toolCount: number; evaluator: PolicyEvaluator } | undefined;
  let lastValid: PolicyEvaluator | undefined;
  let reported: string | undefined;
  const file = fileReader();
  // The configuration the caller already read: a decision reads it once, not once more for its policies.
  return async (current) => {
    const fileName = options.deployedFile ?? current.policiesFile;
    const origin = fileName ?? 'policies';
    let problem: string;
    try {
      const text = fileName ? file(resolvePath(options.baseDir, fileName)) : current.policies;
      if (text === undefined) return undefined;
      if (last && last.text === text && last.principals === current.principals && last.toolCount === tools.size) return last.evaluator;
      // The engine (4 MB of WebAssembly) loads only where policies are configured, never on a cold start without them.
      const { compilePolicies, describePolicyProblems } = await import('./cedar-policies');
      const compiled = compilePolicies(text, [...tools.values()], current.principals);
      if (compiled.ok) {
        if (compiled.evaluator !== lastValid) log().info('policies loaded', { origin, policies: compiled.evaluator.size });
        last = { text, principals: current.principals, toolCount: tools.size, evaluator: compiled.evaluator };
        lastValid = compiled.evaluator;
        return compiled.evaluator;
      }
      problem = describePolicyProblems(origin, compiled.problems);
    } catch (error) {
      problem = (error as Error).message;
    }
    if (!lastValid) throw new Error(`the policies do not load: ${problem}`);
    if (reported !== problem) {
      reported = problem;
      log().warn('the policies do not load; the last valid policies keep serving', { problem });
    }
    return lastValid;
  };
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : join(baseDir, path);
}

/** A policy file, re-read only when its modification time or size changes. */
function fileReader(): (path: string) => string {
  let cached: { path: string; version: string; text: string } | undefined;
  return (path) => {
    let version: string;
    try {
      const info = statSync(path);
      version = `${info.mtimeMs}:${info.size}`;
    } catch (error) {
      throw new Error(`policiesFile ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`, { cause: error });
    }
    if (cached?.path === path && cached.version === version) return cached.text;
    cached = { path, version, text: readFileSync(path, 'utf8') };
    return cached.text;
  };
}
