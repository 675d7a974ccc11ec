import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * A client's mistake is invalid params (-32602) at both revisions, never an internal error (-32603): a
 * request whose params the protocol's schema refuses, `_meta` keys the runner reads with a wrong value, a
 * task id that names nothing. `_meta` is honoured whole or refused: a bad turn never drops the callId.
 */
let stack: TestStack;
beforeAll(async () => {
  process.env.TOOLRUNNER_MCP_WAIT_MS = '8000';
  stack = await startTestStack({ seed: 42 });
}, 240_000);
afterAll(async () => {
  await stack?.stop();
  delete process.env.TOOLRUNNER_MCP_WAIT_MS;
});
beforeEach(async () => stack.sandbox.reset());

type RpcAnswer = { result?: Record<string, any>; error?: { code: number; message: string } };
const ACCEPT = 'application/json, text/event-stream';
let requestId = 0;

/** A 2025-11-25 session opened by hand (tasks declared), and one request of it at a time. */
async function legacySession(key: string): Promise<(method: string, params?: unknown) => Promise<RpcAnswer>> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: ACCEPT };
  const init = await fetch(`${stack.apiUrl}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++requestId,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { tasks: { requests: { tools: { call: {} } } } },
        clientInfo: { name: 'mistakes', version: '1.0.0' },
      },
    }),
  });
  expect(init.status).toBe(200);
  const session = init.headers.get('mcp-session-id')!;
  return async (method, params) => {
    const res = await fetch(`${stack.apiUrl}/mcp`, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++requestId, method, ...(params === undefined ? {} : { params }) }),
    });
    return (await res.json()) as RpcAnswer;
  };
}

const META_2026 = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** One 2026-07-28 request by hand, its `_meta` envelope merged under the given `_meta`. */
async function modern(key: string, method: string, params: Record<string, any>): Promise<RpcAnswer> {
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : '';
  const res = await fetch(`${stack.apiUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++requestId, method, params: { ...params, _meta: { ...META_2026, ...params._meta } } }),
  });
  return (await res.json()) as RpcAnswer;
}

const charge = (customer: string) => ({ amount: 300, currency: 'USD', customer });
const charges = async (customer: string) =>
  (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === customer).length;

/** Each client mistake, what it sends, and what the refusal's message names. */
const TOOL_CALL_MISTAKES: [string, Record<string, unknown>, RegExp][] = [
  [
    'a turn given as a string',
    { name: 'charge_card', arguments: charge('cus_m1'), _meta: { 'toolrunner/callId': 'm1', 'toolrunner/turn': '1' } },
    /toolrunner\/turn/,
  ],
  [
    'a fractional turn',
    { name: 'charge_card', arguments: charge('cus_m2'), _meta: { 'toolrunner/callId': 'm2', 'toolrunner/turn': 1.5 } },
    /toolrunner\/turn/,
  ],
  [
    'a negative turn',
    { name: 'charge_card', arguments: charge('cus_m3'), _meta: { 'toolrunner/callId': 'm3', 'toolrunner/turn': -1 } },
    /toolrunner\/turn/,
  ],
  ['an empty callId', { name: 'charge_card', arguments: charge('cus_m4'), _meta: { 'toolrunner/callId': '' } }, /toolrunner\/callId/],
  ['a numeric callId', { name: 'charge_card', arguments: charge('cus_m5'), _meta: { 'toolrunner/callId': 1 } }, /toolrunner\/callId/],
  ['a tool name that is no string', { name: 5, arguments: {} }, /name/],
  ['arguments that are a string', { name: 'get_order', arguments: 'ord_1' }, /arguments/],
  ['arguments that are an array', { name: 'get_order', arguments: [{ orderId: 'ord_1' }] }, /arguments/],
];

describe('client mistakes over MCP', () => {
  it.each(TOOL_CALL_MISTAKES)('tools/call with %s is invalid params at 2025-11-25, nothing run', async (_what, params, names) => {
    const call = await legacySession(stack.keys.agent);
    const answer = await call('tools/call', params);
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32602, message: expect.stringMatching(names) });
    const customer = (params.arguments as { customer?: string } | undefined)?.customer;
    if (customer) expect(await charges(customer)).toBe(0);
  });

  it.each(TOOL_CALL_MISTAKES)('tools/call with %s is invalid params at 2026-07-28, nothing run', async (_what, params, names) => {
    const answer = await modern(stack.keys.agent, 'tools/call', params);
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32602, message: expect.stringMatching(names) });
    const customer = (params.arguments as { customer?: string } | undefined)?.customer;
    if (customer) expect(await charges(customer)).toBe(0);
  });

  it('a turn refused in _meta never charges twice: the resend is refused too, and the corrected call charges once', async () => {
    const call = await legacySession(stack.keys.agent);
    const meta = { 'toolrunner/callId': 'call_resent', 'toolrunner/turn': '1' };
    for (let i = 0; i < 2; i++)
      expect((await call('tools/call', { name: 'charge_card', arguments: charge('cus_resent'), _meta: meta })).error?.code).toBe(-32602);
    expect(await charges('cus_resent')).toBe(0);
    const fixed = { ...meta, 'toolrunner/turn': 1 };
    const first = await call('tools/call', { name: 'charge_card', arguments: charge('cus_resent'), _meta: fixed });
    const again = await call('tools/call', { name: 'charge_card', arguments: charge('cus_resent'), _meta: fixed });
    expect(first.result?.structuredContent).toMatchObject({ status: 'succeeded' });
    expect(again.result?.structuredContent).toMatchObject({
      status: 'succeeded',
      logical_operation_id: first.result?.structuredContent.logical_operation_id,
    });
    expect(await charges('cus_resent')).toBe(1);
  });

  const OTHER_MISTAKES: [string, string, unknown][] = [
    ['tools/call without params', 'tools/call', undefined],
    [
      'tools/call with a task whose ttl is no number',
      'tools/call',
      { name: 'get_order', arguments: { orderId: 'ord_1' }, task: { ttl: 'soon' } },
    ],
    ['tools/list with a cursor that is no string', 'tools/list', { cursor: 5 }],
    ['tasks/get without a taskId', 'tasks/get', {}],
    ['tasks/get with a numeric taskId', 'tasks/get', { taskId: 5 }],
    ['tasks/get with a taskId that is no operation id', 'tasks/get', { taskId: 'not an operation' }],
    ['tasks/result without a taskId', 'tasks/result', {}],
    ['tasks/result with a taskId that is no operation id', 'tasks/result', { taskId: 'not an operation' }],
    ['tasks/list with a cursor that is no string', 'tasks/list', { cursor: 5 }],
    ['tasks/cancel without a taskId', 'tasks/cancel', {}],
    ['tasks/cancel with a taskId that is no operation id', 'tasks/cancel', { taskId: 'not an operation' }],
  ];
  it.each(OTHER_MISTAKES)('%s is invalid params at 2025-11-25', async (_what, method, params) => {
    const call = await legacySession(stack.keys.agent);
    const answer = await call(method, params);
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32602 });
    expect(answer.error!.message).not.toMatch(/internal error/i);
  });
});
