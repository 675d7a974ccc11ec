import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { slackSignature } from '../../functions/slack/signature';

/**
 * A Slack-shaped Web API on loopback for the official `@slack/web-api` client: checks the bearer token and
 * each method's arguments as Slack does (blocks within Block Kit's limits), records every call, and answers
 * what a test scripts, in Slack's shapes: `{ ok: false, error: 'channel_not_found' }` (HTTP 200), HTTP 429
 * with `Retry-After` (`ratelimited`), HTTP 500.
 */

export interface SlackCall {
  method: string;
  args: Record<string, unknown>;
  /** What the server answered. */
  status: number;
  error?: string;
}

export type SlackScript = { status: 429; retryAfter: number } | { status: 500 } | { error: string };

export interface FakeSlack {
  /** Ends with `/`, as `slack.apiUrl` is given. */
  apiUrl: string;
  calls: SlackCall[];
  /** Answers the next calls of `method` as scripted, in order; later calls succeed. */
  script(method: string, ...answers: SlackScript[]): void;
  /** Successful calls of `method`. */
  ok(method: string): SlackCall[];
  close(): Promise<void>;
}

const LIMITS = { blocks: 50, sectionText: 3000, fieldText: 2000, fields: 10, header: 150, buttonText: 75, buttonValue: 2000, text: 40_000 };

/** Slack's `invalid_blocks` checks for the block types the runner emits. */
export function blockProblems(blocks: unknown): string[] {
  if (blocks === undefined) return [];
  if (!Array.isArray(blocks)) return ['blocks is not an array'];
  const problems: string[] = [];
  if (blocks.length > LIMITS.blocks) problems.push(`${blocks.length} blocks (at most ${LIMITS.blocks})`);
  const textOf = (t: unknown, max: number, where: string) => {
    const o = t as { type?: string; text?: unknown };
    if (!o || (o.type !== 'plain_text' && o.type !== 'mrkdwn') || typeof o.text !== 'string') problems.push(`${where}: not a text object`);
    else if (o.text.length === 0 || Array.from(o.text).length > max)
      problems.push(`${where}: ${Array.from(o.text).length} characters (1 to ${max})`);
  };
  for (const [i, b] of blocks.entries()) {
    const block = b as Record<string, unknown>;
    const where = `blocks[${i}] ${String(block.type)}`;
    switch (block.type) {
      case 'header':
        textOf(block.text, LIMITS.header, where);
        if ((block.text as { type?: string })?.type !== 'plain_text') problems.push(`${where}: a header is plain_text`);
        break;
      case 'section': {
        if (block.text === undefined && block.fields === undefined) problems.push(`${where}: neither text nor fields`);
        if (block.text !== undefined) textOf(block.text, LIMITS.sectionText, where);
        const fields = (block.fields ?? []) as unknown[];
        if (fields.length > LIMITS.fields) problems.push(`${where}: ${fields.length} fields`);
        for (const f of fields) textOf(f, LIMITS.fieldText, `${where} field`);
        break;
      }
      case 'context': {
        const elements = (block.elements ?? []) as unknown[];
        if (elements.length === 0 || elements.length > 10) problems.push(`${where}: ${elements.length} elements`);
        for (const e of elements) textOf(e, LIMITS.sectionText, `${where} element`);
        break;
      }
      case 'actions': {
        const elements = (block.elements ?? []) as Record<string, unknown>[];
        if (elements.length === 0 || elements.length > 25) problems.push(`${where}: ${elements.length} elements`);
        for (const e of elements) {
          if (e.type !== 'button') problems.push(`${where}: ${String(e.type)} is not a button`);
          textOf(e.text, LIMITS.buttonText, `${where} button`);
          if (typeof e.value !== 'string' || e.value.length > LIMITS.buttonValue) problems.push(`${where}: button value`);
          if (typeof e.action_id !== 'string' || e.action_id.length > 255) problems.push(`${where}: action_id`);
        }
        break;
      }
      case 'divider':
        break;
      default:
        problems.push(`${where}: unknown block type`);
    }
  }
  return problems;
}

function argsOf(req: IncomingMessage, raw: string): Record<string, unknown> {
  if ((req.headers['content-type'] ?? '').includes('application/json')) return JSON.parse(raw || '{}');
  const args: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    // The client sends nested arguments (blocks) as JSON text in a form field.
    args[k] = /^[[{]/.test(v) ? JSON.parse(v) : v;
  }
  return args;
}

/** What each method needs, and a problem otherwise (Slack's error code). */
function argumentProblem(method: string, args: Record<string, unknown>): string | undefined {
  const need = (...names: string[]) =>
    names.every((n) => typeof args[n] === 'string' && args[n] !== '') ? undefined : 'invalid_arguments';
  const message = () => {
    if (typeof args.text !== 'string' && args.blocks === undefined) return 'no_text';
    if (typeof args.text === 'string' && args.text.length > LIMITS.text) return 'msg_too_long';
    return blockProblems(args.blocks).length > 0 ? 'invalid_blocks' : undefined;
  };
  switch (method) {
    case 'conversations.open':
      return need('users');
    case 'chat.postMessage':
      return need('channel') ?? message();
    case 'chat.update':
      return need('channel', 'ts') ?? message();
    case 'chat.postEphemeral':
      return need('channel', 'user') ?? message();
    default:
      return 'unknown_method';
  }
}

export async function startFakeSlack(options: { botToken: string }): Promise<FakeSlack> {
  const calls: SlackCall[] = [];
  const scripts = new Map<string, SlackScript[]>();
  let next = 1;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const method = (req.url ?? '').replace(/^\/api\//, '').split('?')[0];
      const answer = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      let args: Record<string, unknown>;
      try {
        args = argsOf(req, Buffer.concat(chunks).toString('utf8'));
      } catch {
        calls.push({ method, args: {}, status: 200, error: 'invalid_json' });
        return answer(200, { ok: false, error: 'invalid_json' });
      }
      const record = (status: number, error?: string) => calls.push({ method, args, status, ...(error ? { error } : {}) });
      if (req.headers.authorization !== `Bearer ${options.botToken}`) {
        record(200, 'invalid_auth');
        return answer(200, { ok: false, error: 'invalid_auth' });
      }
      const scripted = scripts.get(method)?.shift();
      if (scripted && 'status' in scripted && scripted.status === 429) {
        record(429, 'ratelimited');
        return answer(429, { ok: false, error: 'ratelimited' }, { 'Retry-After': String(scripted.retryAfter) });
      }
      if (scripted && 'status' in scripted) {
        record(500, 'internal_error');
        return answer(500, { ok: false, error: 'internal_error' });
      }
      const problem = (scripted && 'error' in scripted ? scripted.error : undefined) ?? argumentProblem(method, args);
      if (problem) {
        record(200, problem);
        return answer(200, { ok: false, error: problem });
      }
      record(200);
      switch (method) {
        case 'conversations.open':
          return answer(200, { ok: true, channel: { id: `D${String(args.users)}` } });
        case 'chat.postMessage':
          return answer(200, { ok: true, channel: args.channel, ts: `1700000000.${String(next++).padStart(6, '0')}`, message: {} });
        case 'chat.update':
          return answer(200, { ok: true, channel: args.channel, ts: args.ts, text: args.text });
        default:
          return answer(200, { ok: true, message_ts: `1700000001.${String(next++).padStart(6, '0')}` });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`,
    calls,
    script: (method, ...answers) => scripts.set(method, [...(scripts.get(method) ?? []), ...answers]),
    ok: (method) => calls.filter((c) => c.method === method && c.status === 200 && !c.error),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A click on a button of a posted message, as Slack sends it: form-encoded `payload=`, signed. */
export function slackClick(input: {
  signingSecret: string;
  teamId: string;
  userId: string;
  channel: string;
  ts: string;
  button: { action_id: string; value: string };
  nowSeconds?: number;
}): { body: string; headers: Record<string, string> } {
  const payload = {
    type: 'block_actions',
    team: { id: input.teamId, domain: 'example' },
    user: { id: input.userId, team_id: input.teamId },
    api_app_id: 'A0TEST',
    container: { type: 'message', message_ts: input.ts, channel_id: input.channel },
    channel: { id: input.channel },
    message: { ts: input.ts },
    response_url: 'https://hooks.slack.com/actions/T0/1/never-used',
    trigger_id: '1.2.3',
    actions: [{ type: 'button', block_id: 'toolrunner_decision', action_ts: '1700000002.000000', ...input.button }],
  };
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const ts = String(input.nowSeconds ?? Math.floor(Date.now() / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(input.signingSecret, ts, body),
    },
  };
}
