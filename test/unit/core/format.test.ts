import { describe, expect, it } from 'vitest';
import { codePointLabel, formatCents, formatMinorUnits, revealInvisible } from '../../../functions/core/format';

describe('format', () => {
  it('shows amounts in their currency’s minor units, cents as dollars, and never throws on a strange code', () => {
    expect(formatMinorUnits(123456, 'EUR')).toBe('€1,234.56');
    expect(formatMinorUnits(5000, 'JPY')).toBe('¥5,000');
    expect(formatCents(60000)).toBe('$600.00');
    expect(formatMinorUnits(5, 'NOPE!')).toBe('5 minor units of NOPE!');
  });

  it('names invisible and direction-changing characters where they stood', () => {
    expect(codePointLabel('\u202E')).toBe('<U+202E>');
    expect(revealInvisible('gpj\u202E.exe\u200B')).toBe('gpj<U+202E>.exe<U+200B>');
    expect(revealInvisible('tab\tand\nnewline stay')).toBe('tab\tand\nnewline stay');
  });
});
