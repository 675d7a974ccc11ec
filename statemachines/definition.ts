import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The one lifecycle definition, deployed by CDK and run unchanged by the embedded engine. */
export const ASL_PATH = fileURLToPath(new URL('./invocation.asl.json', import.meta.url));
/** Its Express variant, generated from it (statemachines/express.ts, `npm run asl:express`). */
export const EXPRESS_ASL_PATH = fileURLToPath(new URL('./invocation-express.asl.json', import.meta.url));

/**
 * The Lambda behind each `${<Name>FunctionArn}` placeholder of the two lifecycle definitions. Their entries,
 * timeouts, memory, tables and permissions are in the one registry of functions, `infra/functions.ts`.
 */
export const LIFECYCLE_FUNCTIONS = ['Validate', 'RequestApproval', 'ExpireApproval', 'Execute', 'Reconcile', 'Report', 'Handoff'] as const;

/** A lifecycle step's function (a Task of the state machine). */
export type LifecycleFunction = (typeof LIFECYCLE_FUNCTIONS)[number];

export const placeholderOf = (name: LifecycleFunction) => `${name}FunctionArn`;

export function readDefinition(): string {
  return readFileSync(ASL_PATH, 'utf8');
}

export function readExpressDefinition(): string {
  return readFileSync(EXPRESS_ASL_PATH, 'utf8');
}

/** Every `${Name}` in the definition, in order of first appearance. */
export function placeholdersIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]))];
}

/** The same text substitution CloudFormation's DefinitionSubstitutions performs; a missing value is an error. */
export function substitute(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`no substitution for \${${name}}`);
    return values[name];
  });
}
