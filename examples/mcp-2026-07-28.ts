// MCP at revision 2026-07-28: no session; each request names its revision, and the runner puts the calls of a
// principal that names no run into its current MCP run. A call without `_meta["toolrunner/callId"]` is
// identified by its run, tool and arguments, so the same call twice is one operation: the second is a replay.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL('/mcp', process.env.TOOLRUNNER_URL ?? 'http://127.0.0.1:3000');
const headers = { Authorization: `Bearer ${process.env.TOOLRUNNER_KEY}` };
const client = new Client({ name: 'my-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
console.log(`tools: ${(await client.listTools()).tools.map((tool) => tool.name).join(', ')}`);
for (const attempt of [1, 2]) {
  const reply = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1' } });
  console.log(`call ${attempt}: ${JSON.stringify(reply.structuredContent)} run ${reply._meta?.['toolrunner/runId']}`);
}
await client.close();
