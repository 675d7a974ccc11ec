// MCP at revision 2025-11-25, what the official SDK's client negotiates unless told otherwise: `initialize`
// opens a session, and the session is one run. Every tools/call is a call of its own, so the same call twice
// is two operations (and runs twice): the second line prints another operation id.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL('/mcp', process.env.TOOLRUNNER_URL ?? 'http://127.0.0.1:3000');
const headers = { Authorization: `Bearer ${process.env.TOOLRUNNER_KEY}` };
const client = new Client({ name: 'my-agent', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
console.log(`tools: ${(await client.listTools()).tools.map((tool) => tool.name).join(', ')}`);
for (const attempt of [1, 2]) {
  const reply = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1' } });
  console.log(`call ${attempt}: ${JSON.stringify(reply.structuredContent)}`);
}
await client.close();
