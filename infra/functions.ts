import type { TableLayout } from '../functions/adapters/tables';
import { TOOL_FUNCTION_TIMEOUT_SECONDS } from '../functions/core/tool-spec';
import type { LifecycleFunction } from '../statemachines/definition';
import type { Port } from './permissions';

/**
 * The HTTP API's routes (`$default` stage), every one to the API Lambda: the API, Slack's interactions, the
 * MCP server, the console and the OAuth protected-resource metadata (RFC 9728). Any other path is API Gateway's own 404.
 */
export const API_ROUTES = [
  'ANY /v1/{proxy+}',
  // Slack's interactivity requests: no authorizer (none of the routes has one); Slack's signature, checked by the Api function.
  'POST /v1/integrations/slack/interactions',
  'ANY /mcp',
  'ANY /console',
  'ANY /console/{proxy+}',
  'ANY /.well-known/oauth-protected-resource',
  'ANY /.well-known/oauth-protected-resource/{proxy+}',
] as const;

/** The construct's functions by name: one per lifecycle step, the API, the sweeper, and where tools run. */
export type FunctionName = LifecycleFunction | 'Api' | 'Sweeper' | 'Tools';

/** The functions that make attempts and lookups: with `toolIsolation: "function"` they invoke `Tools` for the tool code. */
export const RUNS_TOOL_CODE = ['Api', 'Execute', 'Reconcile'] as const satisfies readonly FunctionName[];

export interface FunctionSpec {
  /** The entry under `functions/handlers/`, without extension. */
  entry: string;
  timeoutSeconds: number;
  memoryMb?: number;
  /** Runs or validates tools: its bundle includes the user's tools module and their environment. */
  tools: boolean;
  tables: readonly TableLayout['id'][];
  ports: readonly Port[];
}

/** Every lifecycle step writes runs, operations, their trace and the sweeper's watch entries. */
const LIFECYCLE_TABLES = ['runs', 'operations', 'events', 'watch'] as const;
/** Steps read the principals document: authorization is checked again before every attempt. */
const STEP_PORTS = ['store', 'config', 'blobs'] as const;

/**
 * Every Lambda of the runner: the one list the construct deploys and the embedded stack loads bundles from.
 * `ports` decides its IAM actions (`infra/permissions.ts`): who calls what, read from `functions/steps`.
 */
export const FUNCTIONS: Record<FunctionName, FunctionSpec> = {
  // Where every execution that is resumed enters: routes by the record (and reads the approval TTL).
  Validate: { entry: 'validate', timeoutSeconds: 30, tools: false, tables: LIFECYCLE_TABLES, ports: STEP_PORTS },
  // requestApproval hands the token back itself when the operation moved, and notifies approvers: each
  // its own link (SNS, webhooks within WEBHOOK_DELIVERY.deadlineMs, adapters/notifier.ts) and everyone a notice.
  RequestApproval: {
    entry: 'request-approval',
    timeoutSeconds: 30,
    tools: false,
    tables: LIFECYCLE_TABLES,
    ports: [...STEP_PORTS, 'taskResponse', 'notifyLinks', 'notifyNotices'],
  },
  // Tells everyone an approval expired.
  ExpireApproval: {
    entry: 'expire-approval',
    timeoutSeconds: 30,
    tools: false,
    tables: LIFECYCLE_TABLES,
    ports: [...STEP_PORTS, 'notifyNotices'],
  },
  // One attempt: the longest tool timeout plus the intent and outcome writes. Holds the operation's lock.
  Execute: {
    entry: 'execute',
    timeoutSeconds: TOOL_FUNCTION_TIMEOUT_SECONDS.execute,
    memoryMb: 512,
    tools: true,
    tables: [...LIFECYCLE_TABLES, 'locks'],
    ports: [...STEP_PORTS, 'notifyNotices', 'invokeTools'],
  },
  Reconcile: {
    entry: 'reconcile',
    timeoutSeconds: TOOL_FUNCTION_TIMEOUT_SECONDS.reconcile,
    tools: true,
    tables: [...LIFECYCLE_TABLES, 'locks'],
    ports: [...STEP_PORTS, 'notifyNotices', 'invokeTools'],
  },
  // Releases the lock of an operation it reports (records written before reporting was folded in).
  Report: { entry: 'report', timeoutSeconds: 30, tools: true, tables: [...LIFECYCLE_TABLES, 'locks'], ports: STEP_PORTS },
  // Express only: continues an operation on the Standard machine (a person must decide, a long wait).
  Handoff: { entry: 'handoff', timeoutSeconds: 30, tools: false, tables: LIFECYCLE_TABLES, ports: [...STEP_PORTS, 'startExecution'] },
  // API Gateway gives up at 29 s; long-polls stop at 25 s. Submits (start, or a synchronous Express run),
  // cancels and resolves (stop), decides approvals (task response, then a notice), creates runs once per
  // Idempotency-Key. Serves the console too. Runs the first attempt of a call that waits itself when it fits in
  // the wait (functions/commands/submit.ts), so it may notify reviewers of an outcome it cannot know, as Execute does.
  Api: {
    entry: 'api',
    timeoutSeconds: 29,
    // memory: the construct's apiMemoryMb prop
    tools: true,
    tables: [...LIFECYCLE_TABLES, 'idempotency'],
    ports: [
      'store',
      'onceGuard',
      'config',
      'blobs',
      'startExecution',
      'startSyncExecution',
      'stopExecution',
      'taskResponse',
      'notifyNotices',
      'invokeTools',
    ],
  },
  // Resumes operations past their lease: stops the lost execution, starts a fresh one. Reads no config. Each
  // invocation works until 20 s before this timeout, so one a minute per part never overlaps the next.
  Sweeper: {
    entry: 'sweeper',
    timeoutSeconds: 60,
    tools: false,
    tables: LIFECYCLE_TABLES,
    // `config` and `notifyLinks`: the approvalEscalation pass (steps/escalation.ts) reads the steps and sends them.
    ports: ['store', 'blobs', 'startExecution', 'stopExecution', 'config', 'notifyLinks'],
  },
  // Tool code alone (`toolIsolation: "function"`): invoked synchronously by Api, Execute and Reconcile for each
  // attempt or lookup. No table, port or runner variable: its role holds only what `toolPolicies` grants.
  Tools: { entry: 'tools', timeoutSeconds: TOOL_FUNCTION_TIMEOUT_SECONDS.execute, tools: true, tables: [], ports: [] },
};

export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];
