import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpHandler, McpServer as ModernMcpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** What the upstream saw: every tools/call's idempotency key as it arrived, and the calls its tools ran. */
export interface UpstreamRecord {
  received: { tool: string; key: unknown; authorization?: string }[];
  /** Every request's method and `MCP-Protocol-Version` header, in order. */
  requests: { method: string; revision?: string }[];
  tickets: { title: string; key: unknown }[];
  refunds: number[];
}

/**
 * A real MCP server (the SDK's McpServer over Streamable HTTP, stateless) with a read tool and two write
 * tools, standing in for a third-party server the runner proxies; with `revision: '2026-07-28'`, the SDK's v2
 * server at that revision only (a read and a write tool). `failNext` answers the next N calls
 * of a tool with 503 before they reach it, like an overloaded gateway.
 */
export async function startUpstreamMcp(options: { revision?: '2026-07-28' } = {}): Promise<{
  url: string;
  record: UpstreamRecord;
  failNext(tool: string, count: number): void;
  close(): Promise<void>;
}> {
  const record: UpstreamRecord = { received: [], requests: [], tickets: [], refunds: [] };
  const failures = new Map<string, number>();

  const makeServer = () => {
    const server = new McpServer({ name: 'helpdesk', version: '1.0.0' });
    server.registerTool(
      'lookup',
      { description: 'Look up a ticket.', inputSchema: { id: z.string().min(1) }, annotations: { readOnlyHint: true } },
      async ({ id }) => ({ content: [{ type: 'text', text: `ticket ${id}` }], structuredContent: { id, status: 'open' } }),
    );
    server.registerTool(
      'create_ticket',
      { description: 'Open a ticket.', inputSchema: { title: z.string().min(1) } },
      async ({ title }, extra) => {
        record.tickets.push({ title, key: extra._meta?.['toolrunner/idempotencyKey'] });
        return { content: [{ type: 'text', text: 'created' }], structuredContent: { id: `t_${record.tickets.length}`, title } };
      },
    );
    server.registerTool('close_ticket', { description: 'Close a ticket.', inputSchema: { id: z.string() } }, async ({ id }) => ({
      content: [{ type: 'text', text: `closed ${id}` }],
    }));
    server.registerTool(
      'refund',
      { description: 'Refund an amount.', inputSchema: { amount: z.number().int().positive() } },
      async ({ amount }) => {
        record.refunds.push(amount);
        return { content: [{ type: 'text', text: `refunded ${amount}` }] };
      },
    );
    return server;
  };

  // At 2026-07-28 the same tools on the SDK's v2 server, strict (a 2025 client is refused), one instance per request.
  const modern =
    options.revision === '2026-07-28'
      ? createMcpHandler(
          () => {
            const server = new ModernMcpServer({ name: 'helpdesk', version: '2.0.0' });
            server.registerTool(
              'lookup',
              { description: 'Look up a ticket.', inputSchema: z.object({ id: z.string().min(1) }), annotations: { readOnlyHint: true } },
              async ({ id }) => ({ content: [{ type: 'text', text: `ticket ${id}` }], structuredContent: { id, status: 'open' } }),
            );
            server.registerTool(
              'create_ticket',
              { description: 'Open a ticket.', inputSchema: z.object({ title: z.string().min(1) }) },
              async ({ title }, ctx) => {
                record.tickets.push({ title, key: ctx.mcpReq._meta?.['toolrunner/idempotencyKey'] });
                return { content: [{ type: 'text', text: 'created' }], structuredContent: { id: `t_${record.tickets.length}`, title } };
              },
            );
            return server;
          },
          { legacy: 'reject' },
        )
      : undefined;

  const http: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const revision = req.headers['mcp-protocol-version'];
    record.requests.push({ method: body?.method ?? req.method ?? '?', revision: typeof revision === 'string' ? revision : undefined });
    if (body?.method === 'tools/call') {
      const tool = body.params.name as string;
      record.received.push({ tool, key: body.params._meta?.['toolrunner/idempotencyKey'], authorization: req.headers.authorization });
      const left = failures.get(tool) ?? 0;
      if (left > 0) {
        failures.set(tool, left - 1);
        res.writeHead(503).end('overloaded');
        return;
      }
    }
    if (modern) {
      const headers = Object.fromEntries(Object.entries(req.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])));
      const answer = await modern.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers }), {
        parsedBody: body,
      });
      const answerHeaders: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        answerHeaders[name] = value;
      });
      res.writeHead(answer.status, answerHeaders);
      res.end(Buffer.from(await answer.arrayBuffer()));
      return;
    }
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    record,
    failNext: (tool, count) => void failures.set(tool, count),
    close: () =>
      new Promise<void>((r) => {
        http.close(() => r());
        http.closeAllConnections();
      }),
  };
}
