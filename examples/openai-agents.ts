// The runner's tools in an OpenAI Agents SDK agent: approvals wait for a person at the runner's approval link.
import { Agent } from '@openai/agents';
import { toolrunnerAgents } from 'toolrunner/openai-agents';

const runner = await toolrunnerAgents({ baseUrl: 'http://127.0.0.1:3000', key: process.env.TOOLRUNNER_KEY! });
const agent = new Agent({
  name: 'support',
  instructions: 'Help customers with their orders. Charges over $500 need a person to approve.',
  model: 'gpt-4.1',
  tools: runner.tools,
});
const result = await runner.run(agent, 'Customer cus_42 wants order ord_1 shipped to 1 Main St, Springfield 12345, US.');
console.log(result.finalOutput);
