// The runner's tools in a Vercel AI SDK conversation. A $700 charge needs a person: generateText stops with a
// tool-approval-request while the charge already waits at the runner; once a person decided (the link
// `npm start` prints, or the client's `approve`), the runner's decision resumes the conversation: from the
// saved messages alone, in this process or another. The scripted model stands in for `openai('gpt-4.1')`.
import { generateText, type ModelMessage } from 'ai';
import { responseMessages, toolrunnerAiSdk } from 'toolrunner/ai-sdk';
import { scriptedAiSdkModel } from './scripted-models';

const runner = await toolrunnerAiSdk({ baseUrl: process.env.TOOLRUNNER_URL ?? 'http://127.0.0.1:3000', key: process.env.TOOLRUNNER_KEY! });
console.log(`run ${runner.runId}`);
const model = scriptedAiSdkModel([[{ name: 'charge_card', arguments: { amount: 70_000, currency: 'USD', customer: 'cus_42' } }]]);
const messages: ModelMessage[] = [{ role: 'user', content: 'Charge customer cus_42 $700 for order ord_1.' }];
messages.push(...responseMessages(await generateText({ model, ...runner.toolSettings, messages }))); // save them anywhere
for (const call of await runner.pendingApprovals(messages)) console.log(`waiting for a person: ${call.operationId}`);
let answer = await runner.approvalResponses(messages);
while (!answer) answer = await new Promise((r) => setTimeout(r, 1000)).then(() => runner.approvalResponses(messages));
const resumed = await generateText({ model, ...runner.toolSettings, messages: [...messages, answer] });
console.log(resumed.text);
