/**
 * A real multi-agent, two-policy training run for the editor's tests: `agl train` of the sql sample (writer, checker,
 * rewriter) from its shipped warm-up, with its own policy for the writer and for the rewriter (`--policy writer
 * --policy rewriter`; the checker is served, untrained, by the default policy and the config's agentMatch trains
 * writer and rewriter only), a few small steps, into the given data dir. About 10-20 s on two cores.
 * The tests read every value they expect from the store this writes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export const SQL_AGENT = 'samples/sql/agent.ts#sqlAgent';
/** The roles with their own policy in the run, and the role served by the default policy. */
export const SQL_POLICIES = ['writer', 'rewriter'] as const;
export const SQL_UNTRAINED_ROLE = 'checker';

export interface MultiAgentRunOptions {
  /** Training steps (default 4). */
  steps?: number;
  /** Validation tasks (the first N of samples/sql/data/val.jsonl; default 8). */
  valTasks?: number;
  /** More `agl train` flags. */
  extra?: string[];
}

/** Runs the two-policy sql training into `dataDir` (scratch files in `scratch`); fails the test when it fails. */
export function trainSqlTwoPolicies(dataDir: string, scratch: string, o: MultiAgentRunOptions = {}): void {
  const steps = o.steps ?? 4;
  const val = join(scratch, 'sql-val.jsonl');
  writeFileSync(
    val,
    readFileSync(join(ROOT, 'samples', 'sql', 'data', 'val.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, o.valTasks ?? 8)
      .join('\n') + '\n',
  );
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, 'bin', 'agl.mjs'),
      'train',
      SQL_AGENT,
      '--train',
      'samples/sql/data/train.jsonl',
      '--val',
      val,
      '--model',
      'samples/sql/warmup',
      '--config',
      'samples/sql/train.yaml',
      ...SQL_POLICIES.flatMap((p) => ['--policy', p]),
      '--batch-size',
      '3',
      '--group-size',
      '4',
      '--max-steps',
      String(steps),
      '--val-every',
      String(steps),
      '--workers',
      '4',
      ...(o.extra ?? []),
      '--data-dir',
      dataDir,
      '--quiet',
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 300_000 },
  );
  assert.equal(r.status, 0, `agl train (sql, two policies) failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
}
