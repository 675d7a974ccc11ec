// Imported (`--import`) into the CDK app while template mode synthesizes it: appends the path of every file
// Node loads (ES modules through a loader hook, CommonJS from the require cache at exit) and every file read
// with readFileSync, one per line, to TOOLRUNNER_LOADED_FILES. A later start re-synthesizes when one changed.
import { appendFileSync } from 'node:fs';
import fs from 'node:fs';
import { createRequire, register, syncBuiltinESMExports } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const out = process.env.TOOLRUNNER_LOADED_FILES;

function record(paths) {
  if (out && paths.length) appendFileSync(out, `${paths.join('\n')}\n`);
}

function recordUrl(url) {
  if (typeof url === 'string' && url.startsWith('file:')) record([fileURLToPath(url)]);
}

/** The hooks thread: every module the app (or tsx, ts-node) resolves and loads. */
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  recordUrl(resolved.url);
  return resolved;
}

export async function load(url, context, nextLoad) {
  recordUrl(url);
  return nextLoad(url, context);
}

if (isMainThread && out) {
  register(import.meta.url);
  // Files the app reads itself (a state machine definition, a policies file): the ESM bindings of node:fs
  // follow the CommonJS module once synced, so `import { readFileSync } from 'node:fs'` sees this one too.
  const readFileSync = fs.readFileSync;
  fs.readFileSync = function recordedReadFileSync(path, ...rest) {
    if (typeof path === 'string') record([path.startsWith('file:') ? fileURLToPath(path) : path]);
    else if (path instanceof URL && path.protocol === 'file:') record([fileURLToPath(path)]);
    return readFileSync.call(this, path, ...rest);
  };
  syncBuiltinESMExports();
  process.on('exit', () => record(Object.keys(createRequire(import.meta.url).cache)));
}
