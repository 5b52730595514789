/**
 * Text shown to a person with its unprintable characters made visible: a control character, a lone surrogate or the
 * replacement character (U+FFFD: bytes that were not valid UTF-8) becomes its `\uXXXX` escape, so an answer of broken
 * bytes reads as what it is instead of as blank space. Newlines and tabs stay as they are. Pure: the extension and the
 * webviews import it.
 */

/** Whether a UTF-16 unit at `i` of `s` is unprintable: C0/C1 controls but newline and tab, U+FFFD, a lone surrogate. */
function unprintable(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  if (c === 0x0a || c === 0x09 || c === 0x0d) return false;
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0xfffd) return true;
  const high = (x: number) => x >= 0xd800 && x <= 0xdbff;
  const low = (x: number) => x >= 0xdc00 && x <= 0xdfff;
  if (high(c)) return !low(s.charCodeAt(i + 1));
  if (low(c)) return !high(s.charCodeAt(i - 1));
  return false;
}

/** `s` with each unprintable character as its `\uXXXX` escape. */
export function visibleText(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += unprintable(s, i) ? `\\u${s.charCodeAt(i).toString(16).padStart(4, '0')}` : s[i];
  return out;
}
