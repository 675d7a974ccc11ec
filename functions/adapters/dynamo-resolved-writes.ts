import { type DynamoDBClient, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall, type marshallOptions, unmarshall } from '@aws-sdk/util-dynamodb';

/**
 * A call's writes are puts and one transaction, and the SDK spends more CPU on each request than the runner does
 * on the call's own logic: the document client resolves its middleware (sorting the client's stack with
 * the command's) anew for every request, and refuses the SDK's `cacheMiddleware`. Here the document client's
 * puts and transactions go out as the low-level commands, each command class's handler resolved once on the same
 * client (the SDK's `cacheMiddleware` does the same), their items marshalled as the document client would. Every
 * other command, and any send with options or a callback, goes through the document client unchanged.
 * Middleware added to (or removed from) the client's stack later applies from the next request on: any change to
 * the stack drops the resolved handlers (the SDK's own cache does not, which is why it is not used).
 */

type Input = Record<string, unknown>;
type Resolvable = PutItemCommand | TransactWriteItemsCommand;
type Handler = (command: Resolvable) => Promise<{ output: unknown }>;

/**
 * A put (`Item`) or a keyed item of a transaction (`Key`: `ConditionCheck`, `Update`, `Delete`), its maps of
 * values marshalled; everything else (expressions, names, flags) as it was.
 */
function marshalledInput<T extends Input>(input: T, options: marshallOptions): T {
  const out = { ...input } as Input;
  for (const field of ['Item', 'Key', 'ExpressionAttributeValues'] as const)
    if (input[field] !== undefined) out[field] = marshall(input[field] as Input, options);
  return out as T;
}

function transactItem(item: Input, options: marshallOptions): Input {
  const out = { ...item };
  for (const kind of ['Put', 'ConditionCheck', 'Update', 'Delete'] as const)
    if (item[kind]) out[kind] = marshalledInput(item[kind] as Input, options);
  return out;
}

/** Calls `forget` whenever the stack gains or loses middleware (`use` adds through `add`). */
function forgetOnChange(stack: Record<string, unknown>, forget: () => void): void {
  for (const method of ['add', 'addRelativeTo', 'remove', 'removeByTag'] as const) {
    const original = stack[method] as (...args: unknown[]) => unknown;
    stack[method] = (...args: unknown[]) => {
      forget();
      return original(...args);
    };
  }
}

export function withResolvedWrites(doc: DynamoDBDocumentClient, client: DynamoDBClient): DynamoDBDocumentClient {
  // The whole map at once: its values come out as the document client's value-by-value marshalling makes them.
  const options: marshallOptions = { ...doc.config.translateConfig?.marshallOptions, convertTopLevelContainer: false };
  const unmarshallOptions = doc.config.translateConfig?.unmarshallOptions;
  const handlers = new Map<new (...args: never[]) => Resolvable, Handler>();
  forgetOnChange(client.middlewareStack as unknown as Record<string, unknown>, () => handlers.clear());
  const send = (command: Resolvable): Promise<unknown> => {
    const ctor = command.constructor as new (...args: never[]) => Resolvable;
    let handler = handlers.get(ctor);
    if (!handler) {
      handler = command.resolveMiddleware(client.middlewareStack as never, client.config as never, undefined) as unknown as Handler;
      handlers.set(ctor, handler);
    }
    return handler(command).then((result) => result.output);
  };
  const documentSend = doc.send.bind(doc) as (...args: unknown[]) => Promise<unknown>;
  const resolvedSend = (command: unknown, ...rest: unknown[]): Promise<unknown> => {
    if (rest.length === 0 && command instanceof PutCommand)
      return send(new PutItemCommand(marshalledInput(command.input as Input, options) as never)).then((output) => {
        // What a put returns (ReturnValues) comes back as the document client gives it.
        const out = output as { Attributes?: Parameters<typeof unmarshall>[0] };
        return out.Attributes ? { ...out, Attributes: unmarshall(out.Attributes, unmarshallOptions) } : out;
      });
    if (rest.length === 0 && command instanceof TransactWriteCommand) {
      const input = command.input as Input & { TransactItems?: Input[] };
      const items = input.TransactItems?.map((item) => transactItem(item, options));
      return send(new TransactWriteItemsCommand({ ...input, TransactItems: items } as never));
    }
    return documentSend(command, ...rest);
  };
  doc.send = resolvedSend as DynamoDBDocumentClient['send'];
  return doc;
}
