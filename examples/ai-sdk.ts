// The runner's tools in a Vercel AI SDK call: approvals wait for a person at the runner's approval link.
import { openai } from '@ai-sdk/openai';
import { toolrunnerAiSdk } from 'toolrunner/ai-sdk';

const runner = await toolrunnerAiSdk({ baseUrl: 'http://127.0.0.1:3000', key: process.env.TOOLRUNNER_KEY! });
const result = await runner.generate({
  model: openai('gpt-4.1'),
  system: 'Help customers with their orders. Charges over $500 need a person to approve.',
  prompt: 'Customer cus_42 wants order ord_1 shipped to 1 Main St, Springfield 12345, US.',
});
console.log(result.text);
