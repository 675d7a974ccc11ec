import { describe, expect, it } from 'vitest';
import { EventualReads } from '../../local/template/eventual-reads';

const table = {
  TableName: 'ops',
  KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' as const }],
  GlobalSecondaryIndexes: [
    { IndexName: 'due', KeySchema: [{ AttributeName: 'dueAt', KeyType: 'HASH' as const }], Projection: { ProjectionType: 'ALL' as const } },
  ],
};

function replica(lag: number) {
  let now = 1_000_000;
  let stale = 0;
  const reads = new EventualReads(
    [table],
    () => lag,
    () => (stale += 1),
    () => now,
  );
  return { reads, advance: (ms: number) => (now += ms), stale: () => stale };
}

const item = (id: string, state: string, dueAt?: string) => ({
  id: { S: id },
  state: { S: state },
  ...(dueAt ? { dueAt: { S: dueAt } } : {}),
});

describe('eventual-reads: DynamoDB answering from a replica behind the writes', () => {
  it('knows which requests write which items, and which reads may lag', () => {
    const { reads } = replica(500);
    expect(reads.writtenKeys('PutItem', { TableName: 'ops', Item: item('a', 'x') })).toEqual([{ table: 'ops', key: { id: { S: 'a' } } }]);
    expect(
      reads.writtenKeys('TransactWriteItems', {
        TransactItems: [
          { Update: { TableName: 'ops', Key: { id: { S: 'b' } } } },
          { ConditionCheck: { TableName: 'ops', Key: { id: { S: 'c' } } } },
        ],
      }),
    ).toEqual([{ table: 'ops', key: { id: { S: 'b' } } }]);
    expect(reads.writtenKeys('GetItem', { TableName: 'ops', Key: { id: { S: 'a' } } })).toEqual([]);
    expect(reads.isEventualRead('GetItem', { TableName: 'ops' })).toBe(true);
    expect(reads.isEventualRead('GetItem', { TableName: 'ops', ConsistentRead: true })).toBe(false);
    // An index query is never strongly consistent.
    expect(reads.isEventualRead('Query', { TableName: 'ops', IndexName: 'due', ConsistentRead: true })).toBe(true);
    expect(reads.isEventualRead('UpdateItem', { TableName: 'ops' })).toBe(false);
  });

  it('answers with the image before the earliest write within the lag, and the new one once the lag has passed', () => {
    const { reads, advance, stale } = replica(500);
    const key = { id: { S: 'a' } };
    reads.written([{ table: 'ops', key }], [item('a', 'old')]);
    advance(100);
    reads.written([{ table: 'ops', key }], [item('a', 'middle')]);
    const read = () => reads.lagged('GetItem', { TableName: 'ops', Key: key }, { Item: item('a', 'new') });
    expect(read()).toEqual({ Item: item('a', 'old') });
    advance(450);
    expect(read()).toEqual({ Item: item('a', 'middle') });
    advance(500);
    expect(read()).toEqual({ Item: item('a', 'new') });
    expect(stale()).toBe(2);
  });

  it('a new item is not there yet; an index query does not see an item that just entered the index', () => {
    const { reads } = replica(800);
    reads.written([{ table: 'ops', key: { id: { S: 'n' } } }], [undefined]);
    expect(reads.lagged('GetItem', { TableName: 'ops' }, { Item: item('n', 'new') })).toEqual({});
    reads.written([{ table: 'ops', key: { id: { S: 'd' } } }], [item('d', 'waiting')]);
    const page = reads.lagged(
      'Query',
      { TableName: 'ops', IndexName: 'due' },
      { Items: [item('d', 'due', '2026'), item('e', 'due', '2026')], Count: 2 },
    );
    expect(page).toEqual({ Items: [item('e', 'due', '2026')], Count: 1 });
  });

  it('without lag (the fault off), every answer is as DynamoDB gave it', () => {
    const { reads, stale } = replica(0);
    reads.written([{ table: 'ops', key: { id: { S: 'a' } } }], [item('a', 'old')]);
    expect(reads.lagged('GetItem', { TableName: 'ops' }, { Item: item('a', 'new') })).toEqual({ Item: item('a', 'new') });
    expect(stale()).toBe(0);
  });
});
