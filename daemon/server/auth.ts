/**
 * The daemon's bearer token: generated on first start, kept in `<dataDir>/token` with mode 0600 (only the
 * user can read it), and required as `Authorization: Bearer <token>` on every route except /health.
 * Clients on the same machine read it from the file (client/client.ts AglClient.fromDataDir).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestHandler } from 'express';
import type { Problem } from '../../protocol/api.js';
import { TOKEN_FILE } from '../../protocol/daemon-state.js';
import { problemBody, sendProblem } from './errors.js';

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
      throw new Error(`no token at ${tokenPath(dataDir)}: start the daemon first (agl serve --data-dir ${dataDir})`, { cause: err });
    }
    throw err;
  }
}

/** A checker of Authorization headers: null when it carries the bearer token, else the 401 problem to send. */
export function bearerCheck(token: string): (header: string | undefined, instance: string) => Problem | null {
  const expected = Buffer.from(`Bearer ${token}`);
  return (got, instance) => {
    if (got !== undefined && got.length === expected.length && timingSafeEqual(Buffer.from(got), expected)) return null;
    const detail =
      got === undefined
        ? 'missing Authorization header: send `Authorization: Bearer <token>` (the token is in the daemon data dir, file `token`)'
        : 'wrong bearer token: read the current one from the daemon data dir (file `token`)';
    return problemBody(401, 'unauthorized', detail, [{ path: 'headers.authorization', message: got === undefined ? 'missing' : 'does not match' }], instance);
  };
}

/** Sent with every 401. */
export const AUTHENTICATE_HEADER = 'Bearer realm="agl"';

/** Express middleware: 401 problem+json unless the request carries the bearer token. */
export function requireToken(token: string): RequestHandler {
  const check = bearerCheck(token);
  return (req, res, next) => {
    const problem = check(req.headers.authorization, req.originalUrl);
    if (!problem) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', AUTHENTICATE_HEADER);
    sendProblem(res, problem);
  };
}
