import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../..');

/** The README's quick start: its code blocks (`tools.ts`, `agent.mjs`) and its text, which names the commands the tests run. */
export function quickStart(): { tools: string; agent: string; text: string } {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('## Quick start: your own tools');
  const text = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const block = (lang: string) => {
    const at = text.indexOf(`\n\`\`\`${lang}\n`);
    if (at < 0) throw new Error(`README quick start: no ${lang} block`);
    const from = at + lang.length + 5;
    return text.slice(from, text.indexOf('\n```\n', from) + 1);
  };
  return { tools: block('ts'), agent: block('js'), text };
}
