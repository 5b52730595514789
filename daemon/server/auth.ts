/**
 * The daemon's bearer token: generated on first start, kept in `<dataDir>/token` with mode 0600 (only the
 * user can read it), and required as `Authorization: Bearer <token>` on every route except /health.
 * Clients on the same machine read it from the file (sdk/client.ts AglClient.fromDataDir).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestHandler } from 'express';
import { problemBody, sendProblem } from './errors.js';

export const TOKEN_FILE = 'token';
export const tokenPath = (dataDir: string) => join(dataDir, TOKEN_FILE);

/** Reads the token, creating it (mode 0600) when the file does not exist; tightens a looser mode. */
export function loadOrCreateToken(dataDir: string): { token: string; path: string; created: boolean } {
  const path = tokenPath(dataDir);
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (token.length >= 16) {
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
      return { token, path, created: false };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const token = randomBytes(32).toString('base64url');
  // 'w' (not 'wx'): an empty or truncated token file is replaced. mode applies on creation; chmod covers an existing file.
  writeFileSync(path, token + '\n', { mode: 0o600, flag: 'w' });
  chmodSync(path, 0o600);
  return { token, path, created: true };
}

/** Reads an existing token (clients); throws with a hint when the daemon never ran with this data dir. */
export function readToken(dataDir: string): string {
  try {
    return readFileSync(tokenPath(dataDir), 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`no token at ${tokenPath(dataDir)}: start the daemon first (agl serve --data-dir ${dataDir})`);
    }
    throw err;
  }
}

/** Express middleware: 401 problem+json unless the request carries the bearer token. */
export function requireToken(token: string): RequestHandler {
  const expected = Buffer.from(`Bearer ${token}`);
  return (req, res, next) => {
    const got = req.headers.authorization;
    if (got !== undefined && got.length === expected.length && timingSafeEqual(Buffer.from(got), expected)) { next(); return; }
    res.setHeader('WWW-Authenticate', 'Bearer realm="agl"');
    const detail = got === undefined
      ? 'missing Authorization header: send `Authorization: Bearer <token>` (the token is in the daemon data dir, file `token`)'
      : 'wrong bearer token: read the current one from the daemon data dir (file `token`)';
    sendProblem(res, problemBody(401, 'unauthorized', detail, [{ path: 'headers.authorization', message: got === undefined ? 'missing' : 'does not match' }], req.originalUrl));
  };
}
