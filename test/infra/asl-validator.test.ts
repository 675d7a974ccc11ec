import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { placeholdersIn, substitute } from '../../statemachines/definition';

type Validate = (definition: unknown) => { isValid: boolean; errorsText(separator?: string): string };
const require = createRequire(import.meta.url);
const aslValidator = ((m) => m.default ?? m)(require('asl-validator')) as Validate;

const DIR = 'statemachines';
/** Whatever state machines exist: the lifecycle may be split or renamed, each file is validated. */
const files = readdirSync(DIR).filter((f) => f.endsWith('.asl.json'));

/** A well-formed ARN for each `${Placeholder}`, as CloudFormation substitutes them at deploy time. */
function deployable(text: string): unknown {
  const arnFor = (name: string) =>
    /FunctionArn$/.test(name)
      ? `arn:aws:lambda:eu-west-1:123456789012:function:toolrunner-${name.replace(/FunctionArn$/, '')}`
      : `arn:aws:states:eu-west-1:123456789012:stateMachine:${name}`;
  return JSON.parse(substitute(text, Object.fromEntries(placeholdersIn(text).map((n) => [n, arnFor(n)]))));
}

describe('asl-validator on every state machine definition', () => {
  it('finds the definitions', () => expect(files.length).toBeGreaterThan(0));

  for (const file of files) {
    it(`${file} is valid Amazon States Language once its placeholders are ARNs`, () => {
      const result = aslValidator(deployable(readFileSync(join(DIR, file), 'utf8')));
      expect(result.errorsText('\n')).toBe('');
      expect(result.isValid).toBe(true);
    });
  }

  it('rejects a broken definition (the validator is not a no-op)', () => {
    const broken = deployable(readFileSync(join(DIR, files[0]), 'utf8')) as { StartAt?: string };
    delete broken.StartAt;
    expect(aslValidator(broken).isValid).toBe(false);
  });
});
