import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { quickStart } from '../support/readme';

/**
 * The user docs hold as a reader follows them: every relative link reaches a file, every #anchor a heading of
 * its target, every "above"/"below" something that is there in the same page, and every code block a page
 * says is an example file equals that file.
 *
 * The rule for "above"/"below" (outside code): the word must name where its target is, as a link to a
 * heading of the same page (`[Alarms](#alarms) below`, `[the alarms below](#alarms)`) or as a heading's
 * quoted name (`"Alarms" below`), and that heading must lie above or below as the word says. Anything else
 * ("the quick start above" when it is in another page, "see below" naming nothing) is a finding; a
 * comparison is written with over, under, more or less than.
 */
const root = resolve(import.meta.dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface Heading {
  line: number;
  text: string;
  slug: string;
}

interface Page {
  /** The page with fenced blocks blanked (line numbers kept) and inline code replaced by `x`s (offsets kept). */
  prose: string;
  headings: Heading[];
  /** Fenced blocks: the line before the fence (the last non-blank one) and the block's content. */
  blocks: { intro: string; content: string; line: number }[];
}

/** GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces as hyphens. */
function slugOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

const parsed = new Map<string, Page>();
function pageOf(file: string): Page {
  const known = parsed.get(file);
  if (known) return known;
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const headings: Heading[] = [];
  const blocks: Page['blocks'] = [];
  const seen = new Map<string, number>();
  let fence: { marker: string; from: number } | undefined;
  const prose = lines.map((line, index) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (opening?.[1].startsWith(fence.marker)) {
        let intro = fence.from - 1;
        while (intro >= 0 && lines[intro].trim() === '') intro--;
        blocks.push({
          intro: intro >= 0 ? lines[intro] : '',
          content: lines.slice(fence.from + 1, index).join('\n'),
          line: fence.from + 1,
        });
        fence = undefined;
      }
      return '';
    }
    if (opening) {
      fence = { marker: opening[1], from: index };
      return '';
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const text = heading[2];
      const base = slugOf(text);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      headings.push({ line: index + 1, text: text.replace(/`/g, ''), slug: count ? `${base}-${count}` : base });
    }
    return line;
  });
  // Inline code may span lines within a paragraph: blank it as a whole, keeping every offset.
  const page = { prose: prose.join('\n').replace(/(`+)[^`][\s\S]*?\1/g, (code) => code.replace(/[^\n]/g, 'x')), headings, blocks };
  parsed.set(file, page);
  return page;
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

/** Every finding of the rules above in one page, as `file:line: what`. */
function findingsOf(file: string): string[] {
  const page = pageOf(file);
  const findings: string[] = [];
  for (const link of page.prose.matchAll(/\[(?:[^\]]|\][^(])*?\]\(([^)\s]*)(?:\s+"[^"]*")?\)/g)) {
    const target = link[1];
    const at = `${file}:${lineAt(page.prose, link.index)}`;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const targetFile = path ? relative(root, resolve(root, dirname(file), decodeURI(path))) : file;
    if (path && !existsSync(join(root, targetFile))) {
      findings.push(`${at}: links ${target}, which does not exist`);
      continue;
    }
    if (anchor === undefined || (path && statSync(join(root, targetFile)).isDirectory())) continue;
    if (!targetFile.endsWith('.md')) {
      findings.push(`${at}: links ${target}: an anchor in a file that is not a page`);
      continue;
    }
    if (!pageOf(targetFile).headings.some((h) => h.slug === anchor))
      findings.push(`${at}: links ${target}, but ${targetFile} has no heading with the anchor #${anchor}`);
  }
  for (const word of page.prose.matchAll(/\b(above|below)\b/gi)) {
    const line = lineAt(page.prose, word.index);
    const direction = word[1].toLowerCase();
    const before = page.prose.slice(Math.max(0, word.index - 300), word.index);
    const after = page.prose.slice(word.index + word[0].length, word.index + word[0].length + 300);
    const context = page.prose.slice(Math.max(0, word.index - 40), word.index + 20).replace(/\s+/g, ' ');
    // The heading the word names: a same-page link just before it, a link whose text holds it, or a quoted name.
    const linkedBefore = /\]\(([^)\s]*)\)[\s,]*\(?$/.exec(before);
    const linkedAround = /^[^[\]\n]*\]\(([^)\s]*)\)/.exec(after);
    const quoted = /["“]([^"”\n]{2,80})["”][\s,]*\(?$/.exec(before);
    const linked = linkedBefore?.[1] ?? linkedAround?.[1];
    let target: Heading | undefined;
    if (linked !== undefined) {
      if (!linked.startsWith('#')) {
        findings.push(`${file}:${line}: "${context}": ${direction} points at ${linked}, another page`);
        continue;
      }
      target = page.headings.find((h) => h.slug === linked.slice(1));
    } else if (quoted) target = page.headings.find((h) => h.text.toLowerCase() === quoted[1].toLowerCase());
    if (!target) {
      findings.push(`${file}:${line}: "${context}": ${direction} names no heading of this page (link it, or quote its name)`);
      continue;
    }
    if (direction === 'above' ? target.line >= line : target.line <= line)
      findings.push(`${file}:${line}: "${context}": "${target.text}" is at line ${target.line}, not ${direction}`);
  }
  return findings;
}

describe('the docs hold as a reader follows them', () => {
  it('computes GitHub’s anchors', () => {
    expect(slugOf('Rate limits (`rateLimits` in the config document)')).toBe('rate-limits-ratelimits-in-the-config-document');
    expect(slugOf("Tools without the runner's privileges")).toBe('tools-without-the-runners-privileges');
    expect(slugOf('The stack from the template (`TOOLRUNNER_HANDLERS=template`, `TARGET=template`)')).toBe(
      'the-stack-from-the-template-toolrunner_handlerstemplate-targettemplate',
    );
    expect(slugOf('Quick start: your own tools')).toBe('quick-start-your-own-tools');
  });

  it('finds what a reader would trip on (the rule on a page made for it)', () => {
    const page = {
      prose: [
        '# Page',
        '## First',
        'See the quick start above. [First](#first) above is fine, and so is "Second" below.',
        'Read [the second part below](#second); [Second](#second) above is wrong, and [x](#nowhere) too.',
        '## Second',
      ].join('\n'),
      headings: [
        { line: 2, text: 'First', slug: 'first' },
        { line: 5, text: 'Second', slug: 'second' },
      ],
      blocks: [],
    };
    parsed.set('test-page.md', page);
    const findings = findingsOf('test-page.md');
    parsed.delete('test-page.md');
    expect(findings).toEqual([
      'test-page.md:4: links #nowhere, but test-page.md has no heading with the anchor #nowhere',
      expect.stringMatching(/^test-page\.md:3: ".*quick start above.*": above names no heading of this page/),
      expect.stringMatching(/^test-page\.md:4: ".*\[Second\]\(#second\) above.*": "Second" is at line 5, not above$/),
    ]);
  });

  it.each(pages)('%s: links, anchors, "above" and "below" resolve', (file) => {
    expect(findingsOf(file), file).toEqual([]);
  });

  it('keeps the code blocks a page introduces as an example file equal to that file', () => {
    const copies: string[] = [];
    for (const file of pages)
      for (const block of pageOf(file).blocks) {
        const named = /`(examples\/[^`]+)`[^`]*:\s*$/.exec(block.intro);
        if (!named) continue;
        copies.push(`${file} ${named[1]}`);
        expect(`${block.content}\n`, `${file}:${block.line} is ${named[1]} verbatim`).toBe(readFileSync(join(root, named[1]), 'utf8'));
      }
    expect(copies).toEqual(
      expect.arrayContaining([
        'docs/agents.md examples/mcp-2025-11-25.ts',
        'docs/agents.md examples/mcp-2026-07-28.ts',
        'docs/deploy.md examples/cdk-app/app.ts',
        'docs/deploy.md examples/cdk-app/cdk.json',
      ]),
    );
    // docs/deploy.md's CDK app takes the README's quick start tools module, copied there.
    expect(readFileSync(join(root, 'examples/cdk-app/tools.ts'), 'utf8')).toBe(quickStart().tools);
  });
});
