import { describe, expect, it } from 'vitest';
import { escapeHtml, html, joinHtml, raw, SafeHtml, visible, visibleText } from '../../functions/html/safe-html';

describe('the html tag', () => {
  it('escapes every interpolated value, in text and in quoted attributes', () => {
    const value = `<script>alert("x")</script> & 'y'`;
    expect(html`<p title="${value}">${value}</p>`.toString()).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</p>',
    );
  });

  it('keeps the literal text as written and returns SafeHtml', () => {
    const out = html`<a href="/x">a & b\n</a>`;
    expect(out).toBeInstanceOf(SafeHtml);
    expect(String(out)).toBe('<a href="/x">a & b\n</a>');
  });

  it('keeps raw fragments and nested html results as they are: nothing is escaped twice', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${raw('<br>')}</p>`.toString()).toBe('<p><b>&lt;i&gt;</b><br></p>');
    expect(html`${html`${html`${'&'}`}`}`.toString()).toBe('&amp;');
  });

  it('escapes a string that only looks like HTML, and an object whose toString returns HTML', () => {
    const pretender = { toString: () => '<b>' };
    expect(html`${'<b>'}${pretender}${{ text: '<b>' }}`.toString()).toBe('&lt;b&gt;&lt;b&gt;[object Object]');
  });

  it('joins arrays without a separator, each item escaped unless it is SafeHtml', () => {
    expect(html`<ul>${['<a>', html`<li>${'&'}</li>`, raw('<hr>'), 3]}</ul>`.toString()).toBe('<ul>&lt;a&gt;<li>&amp;</li><hr>3</ul>');
    expect(html`${[['<', html`<i></i>`]]}`.toString()).toBe('&lt;<i></i>');
    expect(html`<ul>${[]}</ul>`.toString()).toBe('<ul></ul>');
  });

  it('prints undefined, null, false, true and numbers as a template literal does (the pages always printed them so)', () => {
    expect(html`${undefined}|${null}|${false}|${true}|${0}|${12.5}|${''}`.toString()).toBe('undefined|null|false|true|0|12.5|');
    expect(html`${undefined}`.toString()).toBe(`${undefined}`);
  });

  it('joinHtml joins with a separator, items escaped unless SafeHtml', () => {
    expect(joinHtml([html`<li>a</li>`, '<li>b</li>'], '\n').toString()).toBe('<li>a</li>\n&lt;li&gt;b&lt;/li&gt;');
    expect(joinHtml([], '\n').toString()).toBe('');
  });

  it('visible escapes and marks invisible characters, as visibleText does, as a fragment html keeps', () => {
    const text = 'a\u202Eb <c>';
    expect(visible(text)).toBeInstanceOf(SafeHtml);
    expect(visible(text).toString()).toBe(visibleText(text));
    expect(html`<p>${visible(text)}</p>`.toString()).toBe('<p>a<span class="cc">&lt;U+202E&gt;</span>b &lt;c&gt;</p>');
  });

  it('escapeHtml is what html applies to a plain value', () => {
    const value = `&<>"'x`;
    expect(html`${value}`.toString()).toBe(escapeHtml(value));
  });
});
