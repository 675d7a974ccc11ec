import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { NODE_PACKAGE, nodeRuntimePath } from '../local/template/lambda-node';

/**
 * `toolrunner node-runtime <major>`: installs Node.js `major` (the npm package `node-<platform>-<arch>`) in a
 * prefix of the project's own, `node_modules/.cache/node<major>` (never a dependency, so the project's scripts
 * keep their Node), where template mode looks for its Lambda runtime's major. Returns the binary's path.
 */
export function installNodeRuntime(major: number, root = process.cwd()): string {
  const { prefix, binary } = nodeRuntimePath(major, root);
  if (!existsSync(binary)) {
    mkdirSync(prefix, { recursive: true });
    const npm = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `${NODE_PACKAGE}@${major}`,
      ],
      // npm's own output goes to stderr: standard output is the binary's path alone.
      { stdio: ['ignore', 2, 'inherit'] },
    );
    if (npm.error) throw new Error(`cannot run npm: ${npm.error.message}`);
    if (npm.status !== 0) throw new Error(`npm install ${NODE_PACKAGE}@${major} failed (exit ${npm.status})`);
  }
  const check = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (check.status !== 0 || !check.stdout.startsWith(`v${major}.`)) throw new Error(`${binary} is not a working Node.js ${major}`);
  return binary;
}
