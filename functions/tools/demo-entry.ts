import { makeDemoTools } from './demo-tools';

/**
 * The demo tools as a tools module (default export: the specs), the shape a `ToolRunner` user passes as
 * `tools.entry`. The sandbox's URL comes from the Lambda's environment.
 */
const sandboxUrl = process.env.SANDBOX_URL;
if (!sandboxUrl) throw new Error('the demo tools need SANDBOX_URL (the sandbox upstreams)');
export default makeDemoTools(sandboxUrl);
