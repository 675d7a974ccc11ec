import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The one lifecycle definition, deployed by CDK and run unchanged by the embedded engine. */
export const ASL_PATH = fileURLToPath(new URL('./invocation.asl.json', import.meta.url));
/** Its Express variant, generated from it (statemachines/express.ts, `npm run asl:express`). */
export const EXPRESS_ASL_PATH = fileURLToPath(new URL('./invocation-express.asl.json', import.meta.url));

/**
 * The registry of lifecycle steps: the Lambda behind each `${<Name>FunctionArn}` placeholder, its handler
 * file under functions/handlers and its timeout. The handlers, the embedded stack and CDK all read this.
 */
export const LIFECYCLE_STEPS = {
  Validate: { entry: 'validate.ts', timeoutSeconds: 30, memoryMb: 256 },
  RequestApproval: { entry: 'request-approval.ts', timeoutSeconds: 30, memoryMb: 256 },
  ExpireApproval: { entry: 'expire-approval.ts', timeoutSeconds: 30, memoryMb: 256 },
  // One attempt: the longest tool timeout plus the intent and outcome writes.
  Execute: { entry: 'execute.ts', timeoutSeconds: 300, memoryMb: 512 },
  Reconcile: { entry: 'reconcile.ts', timeoutSeconds: 120, memoryMb: 256 },
  Report: { entry: 'report.ts', timeoutSeconds: 30, memoryMb: 256 },
  Handoff: { entry: 'handoff.ts', timeoutSeconds: 30, memoryMb: 256 },
} as const satisfies Record<string, { entry: string; timeoutSeconds: number; memoryMb: number }>;

/** The API's Lambda (API Gateway gives up at 29 s; long-polls stop at 25 s). */
export const API_FUNCTION = { entry: 'api.ts', timeoutSeconds: 29, memoryMb: 512 } as const;

export type LifecycleFunction = keyof typeof LIFECYCLE_STEPS;
export const LIFECYCLE_FUNCTIONS = Object.keys(LIFECYCLE_STEPS) as LifecycleFunction[];

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
