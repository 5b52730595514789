/**
 * Keeps the daemon's data private to the user who runs it: the data dir is forced to mode 0700 and the
 * files at its top level (the SQLite store and its -wal/-shm, the token, anything left there) to 0600,
 * whatever mode they were created or left with. SQLite creates -wal/-shm with the main file's mode, so they
 * stay 0600 once it is; daemon.json, rewritten by rename as it changes, holds no secret and is private
 * through the 0700 dir. When a mode cannot be changed (the dir belongs to another user), `agl serve` refuses to start and
 * says which path and what to do.
 */
import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Thrown when the data could not be made private; its message names the path and the fix. */
export class FileModeError extends Error {}

function tighten(path: string, mode: number): boolean {
  let st;
  try {
    st = statSync(path);
  } catch {
    return false;
  } // gone (a -wal after a checkpoint): nothing to protect
  if ((st.mode & 0o777) === mode) return false;
  try {
    chmodSync(path, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new FileModeError(
      `${path} is mode ${(st.mode & 0o777).toString(8)} and could not be made private (${code}): ` +
        `run \`chmod ${mode.toString(8)} ${path}\` (as its owner), or choose another --data-dir`,
    );
  }
  return true;
}

/**
 * Sets the data dir to 0700 and every file directly in it, plus `storeFile` and its -wal/-shm when the store
 * lives elsewhere, to 0600. Returns the paths whose mode it changed (for a log line).
 */
export function makeDataPrivate(dataDir: string, storeFile?: string): string[] {
  const changed: string[] = [];
  if (tighten(dataDir, 0o700)) changed.push(dataDir);
  const files = readdirSync(dataDir, { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(dataDir, e.name));
  if (storeFile) files.push(storeFile, `${storeFile}-wal`, `${storeFile}-shm`);
  for (const file of new Set(files)) if (tighten(file, 0o600)) changed.push(file);
  return changed;
}
