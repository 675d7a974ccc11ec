/**
 * Least privilege from the code outwards: the IAM actions each AWS SDK command needs, and which commands
 * each port of the runtime sends. A function is granted exactly the actions of the ports it uses
 * (`infra/functions.ts`); `test/infra/iam.test.ts` checks that every `new XxxCommand(` in the sources is
 * listed here, and that no function holds an action none of its ports sends.
 * Adding a command is one line in `COMMAND_ACTIONS` and one in the port that sends it.
 */

/** IAM actions per SDK command (`@aws-sdk/client-*` and `@aws-sdk/lib-dynamodb` names). */
export const COMMAND_ACTIONS = {
  GetCommand: ['dynamodb:GetItem'],
  GetItemCommand: ['dynamodb:GetItem'],
  PutCommand: ['dynamodb:PutItem'],
  PutItemCommand: ['dynamodb:PutItem'],
  UpdateCommand: ['dynamodb:UpdateItem'],
  UpdateItemCommand: ['dynamodb:UpdateItem'],
  DeleteCommand: ['dynamodb:DeleteItem'],
  DeleteItemCommand: ['dynamodb:DeleteItem'],
  QueryCommand: ['dynamodb:Query'],
  BatchGetCommand: ['dynamodb:BatchGetItem'],
  // There is no TransactWriteItems action: IAM checks each item's own action (Put, Update, Delete, ConditionCheck).
  TransactWriteCommand: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
  TransactWriteItemsCommand: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
  StartExecutionCommand: ['states:StartExecution'],
  StartSyncExecutionCommand: ['states:StartSyncExecution'],
  StopExecutionCommand: ['states:StopExecution'],
  SendTaskSuccessCommand: ['states:SendTaskSuccess'],
  SendTaskFailureCommand: ['states:SendTaskFailure'],
  GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
  PutSecretValueCommand: ['secretsmanager:PutSecretValue'],
  PublishCommand: ['sns:Publish'],
  PutObjectCommand: ['s3:PutObject'],
  GetObjectCommand: ['s3:GetObject'],
  InvokeCommand: ['lambda:InvokeFunction'],
} as const satisfies Record<string, readonly string[]>;
export type SdkCommand = keyof typeof COMMAND_ACTIONS;

/** The commands behind each port a function may use (the adapters in `functions/adapters/`). */
export const PORT_COMMANDS = {
  /** `dynamo-store.ts`: the operations, runs, events, watch and locks tables. */
  // UpdateCommand (rate-limit counters, dynamo-rate-limits.ts) adds no action: TransactWriteCommand needs UpdateItem already.
  // PutItemCommand and TransactWriteItemsCommand: the same puts and transactions sent as low-level commands
  // (dynamo-resolved-writes.ts); they add no action.
  store: [
    'GetCommand',
    'BatchGetCommand',
    'PutCommand',
    'PutItemCommand',
    'DeleteCommand',
    'QueryCommand',
    'TransactWriteCommand',
    'TransactWriteItemsCommand',
    'UpdateCommand',
  ],
  /** `submission-guard.ts`: Powertools idempotency's DynamoDB persistence layer, on the idempotency table. */
  onceGuard: ['GetItemCommand', 'PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'],
  /** `config-source.ts`: the principals document and the signing key in Secrets Manager. */
  config: ['GetSecretValueCommand'],
  /** `handlers/seed-signing-key.ts` (the signing key's custom resource, not a runner function): the old key copied once. */
  seedSigningKey: ['GetSecretValueCommand', 'PutSecretValueCommand'],
  /** `sfn-lifecycle.ts`: starting an execution (submission, resumption). */
  startExecution: ['StartExecutionCommand'],
  /** `sfn-lifecycle.ts`: a synchronous Express execution (a call that needs no person, answered when it ends). */
  startSyncExecution: ['StartSyncExecutionCommand'],
  /** `sfn-lifecycle.ts`: stopping one (cancel, resolve, a superseded execution). */
  stopExecution: ['StopExecutionCommand'],
  /** `sfn-lifecycle.ts`: handing a task token back (approval decided, or the operation moved). */
  taskResponse: ['SendTaskSuccessCommand', 'SendTaskFailureCommand'],
  /** `notifier.ts`: each approver's link to the links topic (only the construct's `approvers` subscribe, filtered). */
  notifyLinks: ['PublishCommand'],
  /** `notifier.ts`: link-free notices (approvals requested, decided, expired; reviews needed) to the notices topic. */
  notifyNotices: ['PublishCommand'],
  /** `s3-blobs.ts`: results over 64 KiB and large arguments, read wherever a record is read. */
  blobs: ['PutObjectCommand', 'GetObjectCommand'],
  /** `tool-function.ts`: the `Tools` function, which runs tool code without the runner's privileges (`toolIsolation`). */
  invokeTools: ['InvokeCommand'],
} as const satisfies Record<string, readonly SdkCommand[]>;
export type Port = keyof typeof PORT_COMMANDS;

/** The IAM actions of a set of ports, by service prefix, sorted and without duplicates. */
export function actionsOf(ports: readonly Port[]): string[] {
  return [...new Set(ports.flatMap((p) => PORT_COMMANDS[p].flatMap((c) => COMMAND_ACTIONS[c] as readonly string[])))].sort();
}
