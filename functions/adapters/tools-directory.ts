import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { ArgumentsCheck } from '../core/call-policy';
import { canonicalJson } from '../core/canonical';
import type { ToolDirectory } from '../core/ports';
import { ArgumentsCheckSchema, type ToolDescription, ToolsDescriptionSchema, type ToolsQuestion } from '../core/tool-invocation';
import { ToolFunctionError } from './tool-function';

/**
 * The `Tools` function as the answer to what the tools module alone knows: the tools' description, asked once
 * per process, and each call's check at validation. Any failure fails the request (nothing was decided).
 */
export function lambdaToolDirectory(client: LambdaClient, functionName: string): ToolDirectory {
  async function ask(question: ToolsQuestion): Promise<unknown> {
    const reply = await client.send(
      new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: JSON.stringify(question) }),
    );
    const text = Buffer.from(reply.Payload ?? new Uint8Array()).toString('utf8');
    if (reply.FunctionError) throw new ToolFunctionError(`the tools function failed: ${text.slice(0, 500)}`);
    return JSON.parse(text);
  }
  const names = new Set<string>();
  return {
    hosts: (name) => names.has(name),
    async describe(): Promise<ToolDescription[]> {
      const { tools } = ToolsDescriptionSchema.parse(await ask({ action: 'describe' }));
      for (const t of tools) names.add(t.name);
      return tools;
    },
    async check(tool, value): Promise<ArgumentsCheck> {
      return ArgumentsCheckSchema.parse(await ask({ action: 'check', tool, arguments: canonicalJson(value) })) as ArgumentsCheck;
    },
  };
}
