import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeRegistry, type ToolSpec } from '../functions/core/tool-spec';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);
const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);

/**
 * Loads a tools module: its default export is an array of tool specs. TypeScript goes through tsx's
 * programmatic loader, scoped to this one import, so the rest of the process stays plain Node.
 * Every spec is checked as the registry will check it, so a bad policy fails here with its name.
 */
export async function loadTools(path: string): Promise<ToolSpec[]> {
  const file = resolve(path);
  if (!existsSync(file)) throw new Error(`no tools module at ${file}`);
  const ext = extname(file);
  let mod: { default?: unknown };
  if (TYPESCRIPT.has(ext)) {
    const { tsImport } = await import('tsx/esm/api');
    mod = (await tsImport(pathToFileURL(file).href, import.meta.url)) as { default?: unknown };
  } else if (JAVASCRIPT.has(ext)) {
    mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
  } else {
    throw new Error(`${file}: a tools module is .ts, .mts, .js or .mjs`);
  }
  // A CommonJS module or tsx's interop may nest the default export once more.
  const exported = Array.isArray(mod.default) ? mod.default : (mod.default as { default?: unknown } | undefined)?.default;
  if (!Array.isArray(exported) || exported.length === 0)
    throw new Error(`${file}: the default export must be a non-empty array of tool specs`);
  makeRegistry(exported as ToolSpec[]);
  return exported as ToolSpec[];
}
