/**
 * Messages between the runner and its worker processes. TypeScript/JavaScript workers talk over
 * node's IPC channel; Python workers (sdk/python/agl_runner.py) over JSON lines on stdin/stdout.
 */
import type { SpanInput } from '../../protocol/store.js';
import type { LLMInit } from '../../sdk/index.js';

export interface RunJob {
  rolloutId: string;
  attemptId: string;
  mode: 'train' | 'val' | 'test';
  task: unknown;
  /** `path/to/file.ts#exportName` (TS/JS) or `module:function` / `path/file.py:function` (Python). */
  agent: string;
  llm: LLMInit;
}

export interface JobOutcome {
  status: 'succeeded' | 'failed';
  reward: number | null;
  result?: unknown;
  error?: { message: string; stack?: string };
  /** No root span of the attempt records how it ended (its process was killed at the timeout, crashed, never started,
   *  or could not load the agent): the runner records one (execute.ts). */
  unrecorded?: true;
}

export type ToWorker = { type: 'run'; job: RunJob } | { type: 'shutdown' };
export type FromWorker = { type: 'ready' } | { type: 'spans'; spans: SpanInput[] } | { type: 'done'; attemptId: string; outcome: JobOutcome };
