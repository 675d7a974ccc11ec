import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the scripted upstream answers to one `tools/call`: a JSON-RPC result or error, or raw HTTP. */
export type ScriptedAnswer =
  | { result: unknown }
  | { error: { code: number; message: string; data?: unknown } }
  | { http: number; body?: string; contentType?: string }
  /** Sends the headers and half a body, then drops the connection. */
  | { reset: true };

/**
 * An MCP upstream that speaks Streamable HTTP (JSON responses) by hand, so a test can make it answer
 * anything: results that are not CallToolResults, JSON-RPC errors, bodies that are not JSON, oversized
 * answers. `tools` is what `tools/list` returns; `answer` decides each `tools/call`.
 */
export async function startScriptedMcp(options: {
  tools: unknown[];
  answer: (call: { name: string; arguments: unknown }) => ScriptedAnswer;
}): Promise<{ url: string; listed: () => number; close(): Promise<void> }> {
  let listed = 0;
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method: string; params?: any };
    const reply = (body: object) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, ...body }));
    };
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (message.method === 'initialize') {
      reply({
        result: {
          protocolVersion: message.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'scripted', version: '1.0.0' },
        },
      });
      return;
    }
    if (message.method === 'tools/list') {
      listed++;
      reply({ result: { tools: options.tools } });
      return;
    }
    if (message.method !== 'tools/call') {
      reply({ error: { code: -32601, message: 'method not found' } });
      return;
    }
    const answer = options.answer({ name: message.params.name, arguments: message.params.arguments });
    if ('reset' in answer) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0","id":');
      res.socket?.destroy();
      return;
    }
    if ('http' in answer) {
      res.writeHead(answer.http, { 'content-type': answer.contentType ?? 'application/json' }).end(answer.body ?? '');
      return;
    }
    reply(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    listed: () => listed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
