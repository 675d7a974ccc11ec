import { randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException, GetItemCommand, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { makeDocumentClient } from '../../functions/adapters/dynamo-store';
import { createTables, localClient } from '../../local/dynamodb-local';

const client = localClient(inject('dynamoEndpoint'));
afterAll(() => client.destroy());

async function freshTable(): Promise<string> {
  const TableName = `w${randomBytes(4).toString('hex')}`;
  await createTables(client, [
    {
      create: {
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      },
    },
  ]);
  return TableName;
}

/** Every kind of value the store writes: strings, numbers, bytes, lists, maps, booleans, undefined (dropped). */
const itemOf = (id: string, n: number) => ({
  id,
  state: 'succeeded',
  version: n,
  body: Uint8Array.from([n, 1, 2, 3]),
  traceSeqs: [n, n + 1],
  approval: { state: 'pending', expiresAt: '2026-01-01T00:00:00.000Z', nested: [{ ok: true }] },
  gone: undefined,
});

const raw = async (TableName: string, id: string) =>
  (await client.send(new GetItemCommand({ TableName, Key: { id: { S: id } }, ConsistentRead: true }))).Item;

describe('the store client: puts and transactions through handlers resolved once', () => {
  it('stores exactly what the document client stores, for puts and transactions', async () => {
    const table = await freshTable();
    const plain = DynamoDBDocumentClient.from(localClient(inject('dynamoEndpoint')), {
      marshallOptions: { removeUndefinedValues: true },
    });
    const resolved = makeDocumentClient(localClient(inject('dynamoEndpoint')));
    await plain.send(new PutCommand({ TableName: table, Item: itemOf('plain', 1) }));
    await resolved.send(new PutCommand({ TableName: table, Item: itemOf('resolved', 1) }));
    await plain.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf('plain-tx', 2) } }] }));
    await resolved.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf('resolved-tx', 2) } }] }));
    expect({ ...(await raw(table, 'resolved')), id: undefined }).toEqual({ ...(await raw(table, 'plain')), id: undefined });
    expect({ ...(await raw(table, 'resolved-tx')), id: undefined }).toEqual({ ...(await raw(table, 'plain-tx')), id: undefined });
    expect((await resolved.send(new GetCommand({ TableName: table, Key: { id: 'resolved' } }))).Item).toEqual({
      ...itemOf('resolved', 1),
      gone: undefined,
    });
    plain.destroy();
    resolved.destroy();
  });

  it('sends each command with its own input when many are in flight at once', async () => {
    const table = await freshTable();
    const doc = makeDocumentClient(client);
    await Promise.all(Array.from({ length: 20 }, (_, i) => doc.send(new PutCommand({ TableName: table, Item: itemOf(`k${i}`, i) }))));
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf(`t${i}`, 100 + i) } }] })),
      ),
    );
    for (let i = 0; i < 20; i++) expect((await raw(table, `k${i}`))?.version).toEqual({ N: String(i) });
    for (let i = 0; i < 5; i++) expect((await raw(table, `t${i}`))?.version).toEqual({ N: String(100 + i) });
  });

  it('fails a condition as the document client does: the exception, with the item held (unmarshalled by the caller)', async () => {
    const table = await freshTable();
    const doc = makeDocumentClient(client);
    await doc.send(new PutCommand({ TableName: table, Item: itemOf('once', 1) }));
    const again = doc.send(
      new PutCommand({
        TableName: table,
        Item: itemOf('once', 2),
        ConditionExpression: 'attribute_not_exists(id) OR version = :v',
        ExpressionAttributeValues: { ':v': 7 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    await expect(again).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    const failed = (await again.catch((error: ConditionalCheckFailedException) => error)) as ConditionalCheckFailedException;
    expect(failed.Item?.version).toEqual({ N: '1' });
    const tx = doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table, Item: itemOf('other', 1) } },
          {
            ConditionCheck: {
              TableName: table,
              Key: { id: 'once' },
              ConditionExpression: 'version = :v',
              ExpressionAttributeValues: { ':v': 9 },
            },
          },
        ],
      }),
    );
    const cancelled = (await tx.catch((error: unknown) => error)) as TransactionCanceledException;
    expect(cancelled).toBeInstanceOf(TransactionCanceledException);
    expect(cancelled.CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
    expect(await raw(table, 'other')).toBeUndefined();
  });

  it('returns what a put returns as the document client does, and runs middleware added to the client before', async () => {
    const table = await freshTable();
    const counted = localClient(inject('dynamoEndpoint'));
    const seen: string[] = [];
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        seen.push(context.commandName as string);
        return next(args);
      },
      { step: 'build', name: 'countRequests' },
    );
    const doc = makeDocumentClient(counted);
    await doc.send(new PutCommand({ TableName: table, Item: itemOf('r', 1) }));
    const out = await doc.send(new PutCommand({ TableName: table, Item: itemOf('r', 2), ReturnValues: 'ALL_OLD' }));
    expect(out.Attributes).toEqual({ ...itemOf('r', 1), gone: undefined });
    await doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf('s', 1) } }] }));
    expect(seen).toEqual(['PutItemCommand', 'PutItemCommand', 'TransactWriteItemsCommand']);
    counted.destroy();
  });

  it('runs middleware added to the client after its first writes, and stops running what was removed', async () => {
    const table = await freshTable();
    const later = localClient(inject('dynamoEndpoint'));
    const doc = makeDocumentClient(later);
    await doc.send(new PutCommand({ TableName: table, Item: itemOf('a', 1) }));
    await doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf('b', 1) } }] }));
    const seen: string[] = [];
    // As a tracer or a fault injector would: added once the client has served requests.
    later.middlewareStack.add(
      (next, context) => async (args) => {
        seen.push(context.commandName as string);
        return next(args);
      },
      { step: 'build', name: 'addedLater' },
    );
    await doc.send(new PutCommand({ TableName: table, Item: itemOf('a', 2) }));
    await doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: itemOf('b', 2) } }] }));
    expect(seen).toEqual(['PutItemCommand', 'TransactWriteItemsCommand']);
    later.middlewareStack.remove('addedLater');
    await doc.send(new PutCommand({ TableName: table, Item: itemOf('a', 3) }));
    expect(seen).toEqual(['PutItemCommand', 'TransactWriteItemsCommand']);
    expect((await raw(table, 'a'))?.version).toEqual({ N: '3' });
    later.destroy();
  });
});
