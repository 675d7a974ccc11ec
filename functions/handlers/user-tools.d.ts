/**
 * The user's tools module as the Lambda entries import it. It exists only in bundles: the bundler aliases
 * this name to the module given to the `ToolRunner` construct (`tools.entry`), see `infra/bundling.ts`.
 */
declare module 'toolrunner-user-tools' {
  import type { ToolSpec } from '../core/tool-spec';
  const tools: ToolSpec[];
  export default tools;
}
