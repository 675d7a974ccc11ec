import { type ArgumentsCheck, checkArguments } from '../core/call-policy';
import type { ParsedArguments } from '../core/canonical';
import type { Principal } from '../core/model';
import { mayCallTool } from '../core/policy';
import type { Deps } from '../core/ports';
import type { ToolSpec } from '../core/tool-spec';
import { ToolsUnavailableError } from '../core/errors';

/**
 * What the tool's own code says of a call's arguments, asked once per submission or preview: in `Tools` where it
 * hosts the tool (this process never loads the tools module), else here. Asked only of a call that reaches its
 * arguments in the decision's order (the tool exists, the principal may call it, the arguments parse as JSON).
 */
export async function checkCallArguments(
  deps: Pick<Deps, 'toolDirectory'>,
  tool: ToolSpec | undefined,
  principal: Principal | undefined,
  parsed: ParsedArguments,
): Promise<ArgumentsCheck | undefined> {
  if (!tool || !parsed.ok || !mayCallTool(principal, tool.name)) return undefined;
  const directory = deps.toolDirectory;
  if (!directory?.hosts(tool.name)) return checkArguments(tool, parsed.value);
  try {
    return await directory.check(tool.name, parsed.value);
  } catch (error) {
    throw new ToolsUnavailableError(`the tools function could not check the arguments of ${tool.name}; send the call again`, {
      cause: error,
    });
  }
}
