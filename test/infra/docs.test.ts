import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const docs = [
  'README.md',
  'CHANGELOG.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('the docs', () => {
  it('keep the README for a newcomer: under 200 lines, the two commands, pointing to docs by audience', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThan(200);
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
    for (const page of ['tools', 'agents', 'deploy', 'operate', 'security', 'architecture', 'benchmarks'])
      expect(readme, `the README links docs/${page}.md`).toContain(`docs/${page}.md`);
    for (const page of ['config', 'http-api', 'cli']) expect(existsSync(join(root, `docs/reference/${page}.md`))).toBe(true);
  });

  it('link only to files that exist in this repository', () => {
    for (const file of docs) {
      const text = read(file);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        expect(existsSync(resolve(root, dirname(file), target)), `${file} links ${target}`).toBe(true);
      }
    }
  });

  it('never point outside the repository to design notes', () => {
    for (const file of docs) expect(read(file), file).not.toMatch(/DESIGN\.md|\.\.\/shared/);
  });
});
