/**
 * What an evaluation starts from (`agl eval`'s first phase): its settings from the flags, the dataset read and every
 * row checked, the pinned prompt versions read from the store, the judge's settings when a row is graded by the
 * judge. Everything that can be refused is refused here, before a rollout runs: each error names its flag (or the
 * dataset's line and field).
 */
import { resolve } from 'node:path';
import type { EvalFlags } from '../../protocol/cli-commands.js';
import { EVAL_COMMAND } from '../../protocol/cli-commands.js';
import { type EvalConfig, GraderName } from '../../protocol/eval.js';
import { JudgeSection, type JudgeSettings } from '../../protocol/judge-settings.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { PROMOTED_TEXT_VERSION } from '../../protocol/prompt-template.js';
import { PromptName } from '../../protocol/prompts.js';
import { configOverrides } from '../../protocol/train-options.js';
import { runnableAgentSpecOr } from '../optimize/run-plan.js';
import { storedAgentId } from '../runner/agent-ref.js';
import { type EvalTask, readDataset } from './dataset.js';

export interface EvalPlan {
  config: EvalConfig;
  tasks: EvalTask[];
  /** The pinned prompts' texts by name (their versions are in config.prompts). */
  promptTexts: Record<string, string>;
  judge: JudgeSettings | null;
  workers: number;
  rolloutTimeoutSeconds: number;
}

const integer = (flag: string, v: string, min: number): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} ${v}: give a whole number of at least ${min}`);
  return n;
};
const fraction = (flag: string, v: string | undefined): number | null => {
  if (v === undefined) return null;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new Error(`--${flag} ${v}: give a number (a score: 0 to 1 for the graders)`);
  return n;
};

/** The evaluation's plan from its flags; throws naming the flag (or the dataset's row and field) at fault. */
export async function planEval(agent: string, f: EvalFlags, store: LightningStore): Promise<EvalPlan> {
  if (!f.data) throw new Error('--data FILE is required: the dataset (JSON lines with "input", optionally "expected" and "grader")');
  if (Boolean(f.upstream) !== Boolean(f['upstream-model'])) throw new Error('--upstream URL and --upstream-model M go together');
  if (f.upstream && f.model) throw new Error("--upstream and --model both name the agent's model: give one");
  if (f.grader !== undefined && !GraderName.safeParse(f.grader).success) throw new Error(`--grader ${f.grader}: one of ${GraderName.options.join(', ')}`);
  const tolerance = fraction('tolerance', f.tolerance);
  if (tolerance !== null && tolerance < 0) throw new Error(`--tolerance ${f.tolerance}: give a number of at least 0`);
  for (const flag of ['min', 'pass'] as const) fraction(flag, f[flag]);
  const file = resolve(f.data);
  const read = readDataset(file, { grader: (f.grader as GraderName | undefined) ?? null, tolerance: tolerance ?? undefined });
  const { digest } = read;
  const tasks = onlyTasks(read.tasks, f.task ?? []);
  const agentId = storedAgentId(agent);
  const pinned = await pinnedPrompts(store, agentId, f.prompt ?? []);
  const config: EvalConfig = {
    agent: agentId,
    agentSpec: runnableAgentSpecOr(agent),
    data: { file, digest },
    repeat: integer('repeat', f.repeat ?? '1', 1),
    pass: fraction('pass', f.pass ?? '0.5')!,
    grader: (f.grader as GraderName | undefined) ?? null,
    llm: {
      upstream: f.upstream ? { url: f.upstream, model: f['upstream-model']!, keyEnv: f['upstream-key-env'] ?? 'OPENAI_API_KEY' } : null,
      model: f.model ?? null,
    },
    prompts: Object.fromEntries(Object.entries(pinned).map(([n, p]) => [n, p.version])),
    ...(f.task?.length ? { only: tasks.map((t) => t.id) } : {}),
  };
  return {
    config,
    tasks,
    promptTexts: Object.fromEntries(Object.entries(pinned).map(([n, p]) => [n, p.text])),
    judge: tasks.some((t) => t.grader.name === 'judge') ? judgeSettings(f) : null,
    workers: integer('workers', f.workers ?? '4', 0),
    rolloutTimeoutSeconds: integer('rollout-timeout', f['rollout-timeout'] ?? '120', 1),
  };
}

/** The tasks each --task ID names, in the dataset's order (all without any); an id the dataset lacks is an error naming it. */
function onlyTasks(tasks: EvalTask[], ids: readonly string[]): EvalTask[] {
  if (!ids.length) return tasks;
  const have = new Set(tasks.map((t) => t.id));
  const missing = ids.filter((id) => !have.has(id));
  if (missing.length)
    throw new Error(
      `--task ${missing.join(', ')}: the dataset has no such task (its ${tasks.length} ids: ${[...have].slice(0, 8).join(', ')}${have.size > 8 ? ', ...' : ''})`,
    );
  const wanted = new Set(ids);
  return tasks.filter((t) => wanted.has(t.id));
}

/** Each --prompt NAME=VERSION's text: a candidate's (its id) or the agent's promoted text (`promoted`). */
async function pinnedPrompts(store: LightningStore, agent: string, given: string[]): Promise<Record<string, { text: string; version: string }>> {
  const out: Record<string, { text: string; version: string }> = {};
  for (const g of given) {
    const at = g.indexOf('=');
    const name = at > 0 ? g.slice(0, at) : '';
    const version = g.slice(at + 1);
    if (!PromptName.safeParse(name).success || !version)
      throw new Error(`--prompt ${g}: give NAME=VERSION, the prompt's name (as in llm.prompt(NAME, ...)) and a candidate id or 'promoted'`);
    if (out[name]) throw new Error(`--prompt ${g}: ${name} is pinned twice`);
    if (version === PROMOTED_TEXT_VERSION) {
      const p = (await store.listPromotedPrompts(agent)).find((x) => x.name === name);
      if (!p) throw new Error(`--prompt ${g}: the agent ${agent} has no promoted text for ${name} (agl optimize promote RUN publishes one)`);
      out[name] = { text: p.text, version: p.candidateId ?? PROMOTED_TEXT_VERSION };
      continue;
    }
    const c = await store.getPromptCandidate(version);
    if (!c) throw new Error(`--prompt ${g}: no candidate ${version} in this store (the optimization view and agl optimize --json name them)`);
    const text = c.prompts[name];
    if (text === undefined) throw new Error(`--prompt ${g}: candidate ${version} has no prompt ${name} (it has ${Object.keys(c.prompts).join(', ')})`);
    out[name] = { text, version };
  }
  return out;
}

/** The judge grader's settings from the --judge-* flags. */
function judgeSettings(f: EvalFlags): JudgeSettings {
  const given = (configOverrides(EVAL_COMMAND.options, f).judge ?? {}) as Record<string, unknown>;
  if (given.rubric && typeof given.rubric === 'object') given.rubric = { file: resolve((given.rubric as { file: string }).file) };
  // Single mode (one call per answer), and the expected answer shown unless --judge-show-expected false: it is the reference.
  const r = JudgeSection.safeParse({ showExpected: true, ...given, mode: 'single' });
  if (!r.success)
    throw new Error(
      `rows graded by the judge need its settings (--judge-url, --judge-model, --judge-rubric): ${r.error.issues.map((i) => `--judge-${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}
