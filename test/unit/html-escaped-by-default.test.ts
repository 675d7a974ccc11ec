import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
/** The one module that escapes; everything else writes HTML through its `html` tag. */
const TAG_MODULE = 'functions/html/safe-html.ts';

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/**
 * Text that opens or closes an HTML element (`<p>`, `</li>`, `<a href`, `<!doctype`): a template holding it
 * is HTML. Element names only, so a placeholder in a message (`<claim>`, `<U+202E>`) is not.
 */
const ELEMENTS =
  'a|article|b|body|br|button|code|dd|details|div|dl|dt|em|form|h[1-6]|head|header|hr|html|i|input|label|li|main|meta|nav|ol|option|p|pre|script|section|select|span|strong|style|summary|table|tbody|td|textarea|th|thead|time|title|tr|ul';
const MARKUP = new RegExp(`<(!doctype|/?(${ELEMENTS})[\\s>/])`, 'i');

/**
 * Where a file builds HTML outside the tag: a template literal with values and markup that is not `html`
 * tagged (its values would go in unescaped), or a call of the escaping functions themselves (escaping by
 * hand, which is how a value gets forgotten, or escaped twice inside `html`).
 */
function handBuiltHtml(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const where = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node) => {
    if (ts.isTemplateExpression(node)) {
      const parts = [node.head.text, ...node.templateSpans.map((span) => span.literal.text)];
      const tagged = ts.isTaggedTemplateExpression(node.parent) && node.parent.tag.getText(source) === 'html';
      if (!tagged && parts.some((part) => MARKUP.test(part))) found.push(`${where(node)} template with markup outside html\`\``);
    }
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      (node.expression.text === 'escapeHtml' || node.expression.text === 'visibleText')
    )
      found.push(`${where(node)} ${node.expression.text}() outside ${TAG_MODULE}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('HTML is escaped by default', () => {
  const files = sourceFiles('functions').filter((file) => file !== TAG_MODULE);

  it('finds the page modules (the scan reads the right files)', () => {
    expect(files).toEqual(
      expect.arrayContaining(['functions/html/approval-page.ts', 'functions/html/timeline-page.ts', 'functions/console/pages.ts']),
    );
  });

  it('no file under functions/ builds HTML in an untagged template or escapes by hand', () => {
    expect(files.flatMap(handBuiltHtml).map((line) => relative(root, join(root, line)))).toEqual([]);
  });
});
