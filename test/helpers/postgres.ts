/**
 * A throwaway PostgreSQL server for tests: initdb in a temp dir, listening only on 127.0.0.1 at a free port,
 * stopped (and its files removed) afterwards. Uses Debian's server binaries (/usr/lib/postgresql/<v>/bin, or
 * initdb/postgres on PATH). PostgreSQL refuses to run as root, so under root the cluster runs as the
 * unprivileged `postgres` user (runuser) and the temp dir is handed to it.
 * With AGL_TEST_PG_URL set, that server is used instead (the tests create and drop databases on it).
 * Missing binaries are an error telling how to install them: the PostgreSQL tests never skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** Connection URL of the maintenance database (for CREATE DATABASE). */
  readonly adminUrl: string;
  /** Creates an empty database and returns its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

const INSTALL_HINT = 'PostgreSQL server binaries (initdb, postgres) not found. Install them with `apt-get install postgresql` '
  + '(Debian/Ubuntu), or set AGL_TEST_PG_URL to a server where the tests may create databases.';

function findBinDir(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+/.test(v)).sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a)) : [];
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres'))) return bin;
  }
  throw new Error(INSTALL_HINT);
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

function unprivilegedUser(): { uid: number; gid: number; name: string } | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const name = process.env.AGL_TEST_PG_USER ?? 'postgres';
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0) throw new Error(`running as root, PostgreSQL needs an unprivileged user '${name}' (created by \`apt-get install postgresql\`)`);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
}

let counter = 0;
function databaseFactory(adminUrl: string, created: string[]) {
  return async (): Promise<string> => {
    const name = `agl_test_${process.pid}_${Date.now().toString(36)}_${counter++}`;
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try { await client.query(`CREATE DATABASE ${name}`); } finally { await client.end(); }
    created.push(name);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
}

export async function startPostgres(): Promise<PostgresServer> {
  const created: string[] = [];
  const external = process.env.AGL_TEST_PG_URL;
  if (external) {
    return {
      adminUrl: external,
      createDatabase: databaseFactory(external, created),
      async stop() {
        const client = new pg.Client({ connectionString: external });
        await client.connect();
        try { for (const db of created) await client.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`); } finally { await client.end(); }
      },
    };
  }

  const bin = findBinDir();
  const user = unprivilegedUser();
  const dir = mkdtempSync(join(tmpdir(), 'agl-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const asUser = (cmd: string, args: string[]): [string, string[]] => (user ? ['runuser', ['-u', user.name, '--', cmd, ...args]] : [cmd, args]);

  const [initCmd, initArgs] = asUser(join(bin, 'initdb'), ['-D', data, '-U', 'agl', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8', cwd: dir });
  if (init.status !== 0) { rmSync(dir, { recursive: true, force: true }); throw new Error(`initdb failed: ${init.stderr || init.stdout || init.error}`); }

  const port = await freePort();
  const [pgCmd, pgArgs] = asUser(join(bin, 'postgres'), [
    '-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir,
    // A scratch cluster: no fsync (tests do not survive power loss anyway), more connections for claim tests.
    '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200', '-c', 'shared_buffers=64MB',
  ]);
  const child: ChildProcess = spawn(pgCmd, pgArgs, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => { log = (log + d).slice(-4000); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const postmasterPid = () => { try { return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]); } catch { return 0; } };
  const killSync = () => { const pid = postmasterPid(); try { if (pid) process.kill(pid, 'SIGQUIT'); } catch { /* gone */ } };
  process.once('exit', killSync);

  const adminUrl = `postgres://agl@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}: ${log}`);
    const probe = new pg.Client({ connectionString: adminUrl });
    try { await probe.connect(); await probe.end(); break; } catch (e) {
      await probe.end().catch(() => {});
      if (Date.now() > deadline) { killSync(); throw new Error(`postgres did not accept connections within 60 s: ${(e as Error).message}\n${log}`); }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    adminUrl,
    createDatabase: databaseFactory(adminUrl, created),
    async stop() {
      const pid = postmasterPid();
      // SIGINT = fast shutdown: ends sessions, stops cleanly.
      try { if (pid) process.kill(pid, 'SIGINT'); else child.kill('SIGINT'); } catch { /* already gone */ }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null) killSync();
      process.removeListener('exit', killSync);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
