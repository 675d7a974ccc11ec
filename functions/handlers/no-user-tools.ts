import type { ToolSpec } from '../core/tool-spec';

/**
 * The tools module of a function that must not load the user's (`toolIsolation: "function"`): none. Such a
 * function learns the tools from the `Tools` function's description instead (infra/bundling.ts aliases it).
 */
const tools: ToolSpec[] = [];
export default tools;
