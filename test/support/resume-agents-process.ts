import { resumeAgents, type ResumeInput } from './adapter-cases';

/**
 * A process of its own that resumes a paused OpenAI Agents SDK run from its saved state string: reads
 * `{ apiUrl, agentKey, runId, saved }` as JSON on stdin, prints what the model read (and where the SDK was
 * loaded from) as JSON on stdout.
 */
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ResumeInput;
// Where `@openai/agents` came from in this process, so the caller can tell which SDK version resumed the run.
process.stdout.write(JSON.stringify({ read: await resumeAgents(input), agentsModule: import.meta.resolve('@openai/agents') }));
