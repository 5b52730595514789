/**
 * `agl optimize` (prompt optimization: daemon/optimize/) and `agl optimize promote`, declared once
 * (protocol/cli-options.ts): their --help, parsing, the README's flag lists and any command line built for them come
 * from these tables. Beside them, the run's settings as the store keeps them (OptimizeConfig, the config of a run of
 * kind 'optimize'): what the flags resolve to, so `--resume RUN` continues with exactly the settings the run began
 * with (the meta-prompts' texts included: a resumed run asks the optimizer what it asked before).
 */
import { z } from 'zod';
import type { CliCommand, FlagsOf } from './cli-options.js';
import { JudgeSection, judgeFlags } from './judge-settings.js';
import { PromptName } from './prompts.js';

export const OPTIMIZE_ALGORITHMS = ['gepa', 'beam'] as const;

/**
 * The judge's settings as flags (protocol/judge-settings.ts), but those of training only: the self-judging switch (no
 * policy is trained here), the mode (each rollout is judged alone: single), validation and the retest (no GRPO group).
 */
const {
  'allow-self-judge': _selfJudge,
  'judge-mode': _mode,
  'judge-validation': _validation,
  'judge-retest': _retest,
  'judge-min-reliability': _floor,
  ...OPTIMIZE_JUDGE_FLAGS
} = judgeFlags();

export const OPTIMIZE_COMMAND = {
  name: 'optimize',
  summary: "optimize an agent's prompts (GEPA or beam search) against an OpenAI-compatible optimizer model",
  usage: [
    '<agent> --prompt NAME --train F --val F [--test F] --budget N --optimizer-url U --optimizer-model M',
    '<agent> --prompt NAME [--prompt NAME2] ... [--upstream URL --upstream-model M | --model SPEC]',
    '--resume RUN [--json]',
  ],
  about:
    'Optimizes the prompts the agent reads with llm.prompt(NAME, seed): each candidate (a text for every --prompt) is\n' +
    'scored by rolling out tasks through the runner and the gateway, and the optimizer model proposes the next from the\n' +
    "rollouts' answers and the graders' feedback (GEPA: reflect on a minibatch, keep a child strictly better than its\n" +
    'parent, parents from the per-val-task Pareto front; beam: critique then edit, 4 x 4 x 3 rounds). The budget counts\n' +
    "every rollout (minibatches, val, test). The agent's model: --upstream URL --upstream-model M (through the gateway,\n" +
    'recorded), or a local policy --model. Nothing replaces your prompt: `agl optimize promote RUN` does, on request.',
  options: {
    prompt: {
      type: 'string',
      arg: 'NAME',
      multiple: true,
      help: 'a prompt the agent reads with llm.prompt(NAME, ...) (repeat for several, optimized together)',
    },
    train: { type: 'string', arg: 'FILE', help: 'tasks (JSONL) the optimizer learns from: minibatches' },
    val: { type: 'string', arg: 'FILE', help: 'tasks (JSONL) every kept candidate is scored on: parent selection and the best' },
    test: { type: 'string', arg: 'FILE', help: 'held-out tasks (JSONL) the seed and the best are scored on at the end' },
    budget: { type: 'string', arg: 'N', help: 'rollouts in all (minibatches, val, test): never exceeded' },
    algorithm: { type: 'string', arg: 'A', help: 'gepa or beam', default: 'gepa' },
    seed: { type: 'string', arg: 'S', help: 'the search is deterministic in it (minibatches, parents, val batches)', default: '0' },
    minibatch: { type: 'string', arg: 'K', help: 'train tasks per reflection (gepa, default 3) or per critique (beam, default 4)' },
    merge: { type: 'boolean', help: 'gepa: also merge two front members that share an ancestor (up to 5 times)' },
    'beam-width': { type: 'string', arg: 'W', help: 'beam: candidates kept each round', default: '4' },
    'beam-branch': { type: 'string', arg: 'B', help: 'beam: children per beam member each round', default: '4' },
    'beam-rounds': { type: 'string', arg: 'R', help: 'beam: rounds', default: '3' },
    'val-batch': { type: 'string', arg: 'N', help: 'beam: val tasks each round ranks the beam on (the leader is then scored on all of val)', default: '16' },
    upstream: { type: 'string', arg: 'URL', help: "the agent's model: an OpenAI-compatible server (base URL ending in /v1) the gateway forwards to" },
    'upstream-model': { type: 'string', arg: 'M', help: 'the model to ask it for' },
    'upstream-key-env': { type: 'string', arg: 'VAR', help: "the environment variable holding that server's API key", default: 'OPENAI_API_KEY' },
    model: { type: 'string', arg: 'SPEC', help: "the agent's model as a local policy instead: builtin:0.8m, a checkpoint or a Hugging Face folder" },
    'optimizer-url': { type: 'string', arg: 'URL', help: "the optimizer model's OpenAI-compatible server (base URL ending in /v1)" },
    'optimizer-model': { type: 'string', arg: 'M', help: 'the optimizer model (a capable one: it reads traces and rewrites prompts)' },
    'optimizer-key-env': { type: 'string', arg: 'VAR', help: 'the environment variable holding its API key', default: 'OPENAI_API_KEY' },
    'optimizer-price-in': { type: 'string', arg: 'X', help: "the optimizer's price per million prompt tokens (the run's cost is reported with both prices)" },
    'optimizer-price-out': { type: 'string', arg: 'X', help: "the optimizer's price per million completion tokens" },
    'optimizer-timeout': { type: 'string', arg: 'S', help: 'seconds an optimizer call may take before it is tried again', default: '180' },
    'optimizer-retries': {
      type: 'string',
      arg: 'N',
      help: 'tries after the first on 429, 5xx, a timeout, an empty or unusable answer; then the proposal is dropped',
      default: '4',
    },
    'meta-reflect': { type: 'string', arg: 'FILE', help: "gepa's reflection meta-prompt instead of the shipped one (daemon/optimize/meta/reflect.md)" },
    'meta-critique': { type: 'string', arg: 'FILE', help: "beam's critique meta-prompt (meta/critique.md)" },
    'meta-edit': { type: 'string', arg: 'FILE', help: "beam's edit meta-prompt (meta/edit.md)" },
    'meta-merge': { type: 'string', arg: 'FILE', help: "gepa's merge meta-prompt (meta/merge.md)" },
    'max-prompt-chars': { type: 'string', arg: 'N', help: 'a candidate with a longer prompt is refused', default: '8000' },
    config: {
      type: 'string',
      arg: 'FILE',
      help: 'a train.yaml whose judge: section scores every rollout (its score the reward, its explanation the feedback); the --judge-* flags override it',
    },
    ...OPTIMIZE_JUDGE_FLAGS,
    workers: { type: 'string', arg: 'N', help: 'runner workers in this process (0: rely on `agl runner` processes)', default: '4' },
    'rollout-timeout': { type: 'string', arg: 'S', help: 'a rollout running longer fails (and scores 0, its error as feedback)', default: '120' },
    resume: { type: 'string', arg: 'RUN', help: 'continue a run (killed or stopped) from what it scored; it reaches the same end' },
    json: { type: 'boolean', help: 'print one JSON object: runId, prompts (seed and best), scores, rollouts, optimizerCalls, candidates' },
    quiet: { type: 'boolean', help: 'no progress bar' },
    url: { type: 'string', arg: 'URL', help: 'run against the daemon at URL (with --token) instead of a store and gateway of its own' },
    token: { type: 'string', arg: 'T', help: "that daemon's token (or AGL_TOKEN)" },
    'data-dir': { type: 'string', arg: 'DIR', help: 'the data dir whose store it uses (default ~/.agent-lightning, or AGL_DATA_DIR)' },
    store: { type: 'string', arg: 'SPEC', help: "postgres://... or a SQLite file instead of the data dir's store (or AGL_STORE)" },
  },
  positionals: true,
  notes:
    'The task files are JSON lines (an "id" field names a task). The optimizer sees each rollout\'s LLM calls and the\n' +
    "reward's feedback (emitReward(v, { feedback }) or an agent returning { reward, feedback }); a failed rollout scores 0\n" +
    'with its error as feedback. With an LLM judge (--judge-url, --judge-model, --judge-rubric, or --config train.yaml\n' +
    'with a judge: section), the judge scores every rollout that succeeded, one call each (single mode): its score is\n' +
    "the reward (with --judge-weight w: the agent's own plus w times it), its explanation the feedback the optimizer\n" +
    'reads; a reward the agent locked is kept. What the judge cost (calls, tokens, cost) is counted apart from the\n' +
    "optimizer's, at the end and in the run's summary. Ctrl-C stops the run; --resume RUN continues it (and its counts,\n" +
    'from what the store recorded, after a kill too).',
} as const satisfies CliCommand;

export const OPTIMIZE_PROMOTE_COMMAND = {
  name: 'optimize promote',
  summary: "publish an optimization's candidate as the prompts the agent gets outside optimization",
  usage: ['RUN [CANDIDATE] [--apply] [--json]', 'RUN --clear [--json]'],
  about:
    "Publishes the candidate (default: the run's best) as the promoted text of each of its prompts: llm.prompt(NAME, seed)\n" +
    "returns it from then on, for the run's agent, until cleared (--clear). A prompt whose seed is a file\n" +
    '({ file: "prompts/x.md" }) also gets the text written beside it, as x.optimized.md, or into the file itself\n' +
    'with --apply.',
  options: {
    clear: { type: 'boolean', help: "clear the promoted texts of the run's prompts: its agent reads the seeds in its code again" },
    apply: { type: 'boolean', help: "write a file seed's new text into the file itself instead of <name>.optimized.md beside it" },
    json: { type: 'boolean', help: 'print what was promoted and written as JSON' },
    url: OPTIMIZE_COMMAND.options.url,
    token: OPTIMIZE_COMMAND.options.token,
    'data-dir': OPTIMIZE_COMMAND.options['data-dir'],
    store: OPTIMIZE_COMMAND.options.store,
  },
  positionals: true,
} as const satisfies CliCommand;

export type OptimizeFlags = FlagsOf<typeof OPTIMIZE_COMMAND.options>;
export type PromoteFlags = FlagsOf<typeof OPTIMIZE_PROMOTE_COMMAND.options>;

/** An optimization's settings, as its run record keeps them (TrainingRun.config of a run of kind 'optimize'). */
export const OptimizeConfig = z
  .object({
    /** The agent's stable id (protocol/agent-id.ts), and how the user named it (what the runner runs). */
    agent: z.string(),
    agentSpec: z.string(),
    prompts: z.array(PromptName).min(1),
    /** The task files (absolute) and a digest of their tasks: a resumed run must read the same tasks. */
    data: z.object({ train: z.string(), val: z.string(), test: z.string().nullable(), digest: z.string() }).strict(),
    budget: z.number().int().min(1),
    algorithm: z.enum(OPTIMIZE_ALGORITHMS),
    seed: z.number().int(),
    minibatch: z.number().int().min(1),
    merge: z.boolean(),
    beam: z
      .object({ width: z.number().int().min(1), branch: z.number().int().min(1), rounds: z.number().int().min(1), valBatch: z.number().int().min(1) })
      .strict(),
    maxPromptChars: z.number().int().min(1),
    /** The agent's model: an upstream server through the gateway, or a local policy (`model`). */
    llm: z
      .object({
        upstream: z.object({ url: z.string(), model: z.string(), keyEnv: z.string() }).strict().nullable(),
        model: z.string().nullable(),
      })
      .strict(),
    optimizer: z
      .object({
        url: z.string(),
        model: z.string(),
        keyEnv: z.string(),
        priceIn: z.number().min(0).nullable(),
        priceOut: z.number().min(0).nullable(),
        timeoutSeconds: z.number().positive(),
        retries: z.number().int().min(0),
      })
      .strict(),
    /** The meta-prompts' texts (daemon/optimize/meta/*.md, or the files of --meta-*). */
    meta: z.object({ reflect: z.string(), critique: z.string(), edit: z.string(), merge: z.string() }).strict(),
    workers: z.number().int().min(0),
    rolloutTimeoutSeconds: z.number().positive(),
    /** An LLM judge scoring every rollout (--judge-*, --config's judge:), one call each; null: the agent's own rewards. */
    judge: JudgeSection.nullable().default(null),
  })
  .strict();
export type OptimizeConfig = z.infer<typeof OptimizeConfig>;
