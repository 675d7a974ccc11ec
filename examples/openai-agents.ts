// The runner's tools in an OpenAI Agents SDK agent. A $700 charge needs a person: the run stops with an
// interruption while the charge already waits at the runner; its state is saved as a string, and once a person
// decided (the link `npm start` prints, or the client's `approve`), any process resumes it from that string:
// the runner's decision approves or rejects the call. The scripted model stands in for `model: 'gpt-4.1'`.
import { Agent, run } from '@openai/agents';
import { toolrunnerAgents } from 'toolrunner/openai-agents';
import { ScriptedAgentsModel } from './scripted-models';

const options = { baseUrl: process.env.TOOLRUNNER_URL ?? 'http://127.0.0.1:3000', key: process.env.TOOLRUNNER_KEY! };
const model = new ScriptedAgentsModel([[{ name: 'charge_card', arguments: { amount: 70_000, currency: 'USD', customer: 'cus_42' } }]]);
const agentWith = (tools: Agent['tools']) => new Agent({ name: 'support', instructions: 'Help customers.', model, tools });
const runner = await toolrunnerAgents(options);
console.log(`run ${runner.runId}`);
const paused = await run(agentWith(runner.tools), 'Charge customer cus_42 $700 for order ord_1.');
const saved = paused.state.toString(); // store it anywhere
for (const call of await runner.pendingApprovals(paused)) console.log(`waiting for a person: ${call.operationId}`);
// Later, in this process or another: the same run, the saved string, the person's decision at the runner.
const later = await toolrunnerAgents({ ...options, runId: runner.runId });
const agent = agentWith(later.tools);
let restored = await later.restore(agent, saved);
while (restored.pending.length) restored = await new Promise((r) => setTimeout(r, 1000)).then(() => later.restore(agent, saved));
console.log((await run(agent, restored.state)).finalOutput);
