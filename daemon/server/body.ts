/**
 * Request bodies at the edge, read one way by every route that takes JSON: the store API (express and the
 * hot path alike), the gateway and OTLP/JSON. A body must be sent as `application/json` (charset UTF-8 when
 * named; 415 otherwise), its bytes must be valid UTF-8 (400 naming the first bad byte: never silently
 * turned into U+FFFD), a leading byte-order mark is dropped, and only a JSON object or array is a body (as
 * express.json({ strict: true }), but a number, string or null is named as what it is, not as malformed).
 * An empty JSON body is `{}`; a request without any body has none.
 */
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { bodyNotAnObject, HttpProblem } from './errors.js';

/** True for `application/json`, with or without a UTF-8 charset; throws a 415 problem for anything else. */
export function requireJsonType(contentType: string | undefined): void {
  const [media = '', ...params] = (contentType ?? '').split(';');
  if (media.trim().toLowerCase() !== 'application/json') {
    throw new HttpProblem(415, 'unsupported-media-type', `unsupported Content-Type '${contentType ?? ''}': send the body as application/json`, [
      { path: 'headers.content-type', message: contentType === undefined ? 'missing' : `expected application/json, received ${media.trim() || '(empty)'}` },
    ]);
  }
  for (const param of params) {
    const [name = '', value = ''] = param.split('=');
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    if (name.trim().toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') {
      throw new HttpProblem(415, 'unsupported-charset', `unsupported charset '${charset}': JSON bodies are UTF-8 (send charset=utf-8 or none)`, [
        { path: 'headers.content-type', message: `charset ${charset} is not supported` },
      ]);
    }
  }
}

/** Where the first byte that breaks UTF-8 is (-1 when none): only asked once a strict decode has failed. */
export function firstInvalidUtf8(buf: Uint8Array): number {
  for (let i = 0; i < buf.length;) {
    const b = buf[i]!;
    const n = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    // Second byte's range rules out overlong forms, surrogates and code points above U+10FFFF.
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= n; k++) {
      const c = buf[i + k];
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return -1;
}

/** The bytes as text, or a 400 problem naming the first byte that is not UTF-8. */
export function decodeUtf8(buf: Uint8Array, what = '(body)'): string {
  // node's validator (simdutf) then a plain decode: as fast as the lenient decode alone on span batches.
  if (isUtf8(buf)) return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8');
  const at = firstInvalidUtf8(buf);
  throw new HttpProblem(
    400,
    'invalid-utf8',
    `${what === '(body)' ? 'request body' : what} is not valid UTF-8 (first bad byte at offset ${at}): send UTF-8 text`,
    [{ path: what, message: `not valid UTF-8 at byte ${at}` }],
  );
}

/**
 * A JSON body's bytes -> its value: strict UTF-8, BOM dropped, an object or array only. Text that is not JSON is
 * malformed (V8's message, as body-parser words it); JSON that is a number, a string, true/false or null is a
 * 400 naming the body and what it was, as an array is once its route's schema reads it.
 */
export function parseJsonBytes(buf: Uint8Array): unknown {
  let text = decodeUtf8(buf);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw Object.assign(err as Error, { type: 'entity.parse.failed' });
  }
  if (value === null || typeof value !== 'object') throw bodyNotAnObject(value);
  return value;
}

/**
 * Express middleware for a router's JSON bodies: read (size limit, gzip/deflate as express.json), then
 * checked and parsed as above. A request without a body (none sent, or an empty one without a JSON type)
 * leaves `req.body` undefined.
 */
export function jsonBody(limit: string): RequestHandler[] {
  return [
    express.raw({ type: () => true, limit }),
    (req, _res, next) => {
      const raw = req.body as Buffer | undefined;
      const type = req.headers['content-type'];
      if (!Buffer.isBuffer(raw) || (raw.length === 0 && type === undefined)) {
        req.body = undefined;
        next();
        return;
      }
      requireJsonType(type);
      req.body = parseJsonBytes(raw);
      next();
    },
  ];
}
