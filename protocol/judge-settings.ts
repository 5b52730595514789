/**
 * The LLM judge's settings (train.yaml `judge:`), declared once: one table whose fields carry their doc, type and
 * default, and from it the zod section the training config holds (JudgeSection) and `agl train`'s --judge-* flags
 * (judgeFlags, each into `judge.<key>`; protocol/train-options.ts). A judge scores a rollout instead of (or beside) the
 * reward the agent computes: in `group` mode one call per task group ranks its rollouts relative to each other (ART's
 * RULER), in `single` mode one call per rollout scores it against an absolute rubric. daemon/judge/ asks it,
 * daemon/algorithm/step-judge.ts trains on it. The viewer's bundle never imports this file (it holds zod).
 */
import { z } from 'zod';
import type { CliOption } from './cli-options.js';
import { JUDGE_MODES } from './judge-reading.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A rubric: its text, or a file holding it (train.yaml: relative to the config file; --judge-rubric: to the working directory). */
export const RubricSetting = z.union([z.string().min(1), z.object({ file: z.string().min(1) }).strict()]);
export type RubricSetting = z.infer<typeof RubricSetting>;

/** A field of the declaration: its type, its default (`required`: none), what it means, and how its flag reads a value. */
interface Field<T extends z.ZodType = z.ZodType> {
  type: T;
  default: z.output<T> | typeof REQUIRED;
  doc: string;
  arg: string;
  parse?: CliOption['parse'];
}
const REQUIRED = Symbol('required');
const field = <T extends z.ZodType>(type: T, dflt: z.output<T> | typeof REQUIRED, doc: string, arg: string, parse?: CliOption['parse']): Field<T> => ({
  type,
  default: dflt,
  doc,
  arg,
  parse,
});

/** Every judge setting: the one declaration. */
const FIELDS = {
  url: field(z.string().url(), REQUIRED, "the judge's OpenAI-compatible base URL, ending in /v1 (OpenAI, vLLM, Ollama, llama.cpp)", 'URL'),
  model: field(z.string().min(1), REQUIRED, 'the model the judge is asked by', 'M'),
  keyEnv: field(
    z.string().regex(ENV_NAME, 'an environment variable name').nullable(),
    null,
    "the environment variable holding the judge's API key (read when the run starts, never stored); null: no key",
    'NAME',
  ),
  rubric: field(
    RubricSetting,
    REQUIRED,
    'what makes a trajectory good, in words: the text, or { file } (train.yaml: relative to the config file)',
    'FILE',
    'file',
  ),
  mode: field(
    z.enum(JUDGE_MODES),
    'group',
    "group: one call per task group scores its rollouts relative to each other, in [0, 1] (what GRPO compares); single: one call per rollout against the rubric's absolute scale",
    JUDGE_MODES.join('|'),
  ),
  weight: field(
    z.number().nullable(),
    null,
    "null: the judge's score is the rollout's reward; a number w: the reward is the agent's own plus w times the judge's score",
    'X|null',
    'nullable-number',
  ),
  validation: field(
    z.enum(['auto', 'judge', 'agent']),
    'auto',
    "how validation rollouts are scored: auto (the judge, one call each, only those the agent gave no reward), judge (every one), agent (the agent's own reward only)",
    'auto|judge|agent',
  ),
  showExpected: field(
    z.boolean(),
    false,
    "show the judge the task's expected-output fields (answer, gold, ...); hidden by default: a judge is for grading without them",
    'true|false',
    'boolean',
  ),
  retest: field(
    z.boolean(),
    true,
    "test-retest between separate calls: half of a step's groups whose scores spread are shown again by a call of their own (single mode: one rollout of each of 4 tasks a step gets a second call); the within-group correlation of the two calls' scores is the judge's reliability, and the judged groups' advantages are multiplied by its weight, its informativeness (the square root of the reliability) once the reliability's lower 95% bound is above 0 (0, groups left out, for a judge whose scores are not shown to reproduce: one scoring at random or by the place it shows a trajectory at); the second score is never a reward; a group call also shows one trajectory twice, a check of position effects only",
    'true|false',
    'boolean',
  ),
  minReliability: field(
    z.number().min(0).max(1),
    0,
    "with the judge's weight (judge.retest) at or below this, the judged groups are left out of the update (0: only at weight 0, a judge not shown to be informative)",
    'X',
    'number',
  ),
  timeoutSeconds: field(z.number().positive(), 60, 'how long one try of a call may take', 'S', 'number'),
  retries: field(z.number().int().min(0), 3, 'tries after the first for a call that failed (429, 5xx, timeout) or gave an unusable answer', 'N', 'number'),
  backoffSeconds: field(z.number().min(0), 2, "the wait before the first retry; each next one doubles (a server's retry-after wins)", 'S', 'number'),
  concurrency: field(z.number().int().min(1), 4, 'judge calls in flight at once', 'N', 'number'),
  temperature: field(z.number().min(0).max(2), 0, "the judge's sampling temperature", 'X', 'number'),
  maxTokens: field(z.number().int().min(1).nullable(), null, "the longest answer asked for; null: the server's limit", 'N|null', 'nullable-number'),
  maxTrajectoryChars: field(
    z.number().int().min(200),
    12_000,
    'each trajectory shown to the judge is cut in the middle past this many characters',
    'N',
    'number',
  ),
  priceIn: field(z.number().min(0).nullable(), null, 'price per million prompt tokens, for the cost (null: no cost recorded)', 'X|null', 'nullable-number'),
  priceOut: field(
    z.number().min(0).nullable(),
    null,
    'price per million completion tokens, for the cost (null: no cost recorded)',
    'X|null',
    'nullable-number',
  ),
  allowSelfJudge: field(
    z.boolean(),
    false,
    'let the judge be the policy being trained (the run refuses it otherwise: a policy grading itself learns to please itself)',
    '',
    'boolean',
  ),
} satisfies Record<string, Field>;
type Fields = typeof FIELDS;
export type JudgeKey = keyof Fields;
const KEYS = Object.keys(FIELDS) as JudgeKey[];

type SectionShape = {
  [K in JudgeKey]: Fields[K]['default'] extends typeof REQUIRED ? Fields[K]['type'] : z.ZodDefault<Fields[K]['type']>;
};

/** train.yaml's `judge:` section: url, model and rubric required, every other setting with its default. */
export const JudgeSection = z
  .object(
    Object.fromEntries(
      KEYS.map((k) => {
        const f = FIELDS[k] as Field;
        const t = f.type.describe(f.doc);
        return [k, f.default === REQUIRED ? t : t.default(f.default as never)];
      }),
    ) as SectionShape,
  )
  .strict();
export type JudgeSettings = z.output<typeof JudgeSection>;
export type JudgeSettingsInput = z.input<typeof JudgeSection>;

/** `lossAggregation` -> `loss-aggregation`. */
type Kebab<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `-${Lowercase<H>}`}${Kebab<T>}` : S;
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
type FlagName<K extends JudgeKey> = K extends 'allowSelfJudge' ? 'allow-self-judge' : `judge-${Kebab<K>}`;

/** A setting's flag: `--judge-<key>` (`--allow-self-judge` a plain switch), its help the field's doc with its default. */
function flagOf(k: JudgeKey): CliOption & { config: `judge.${JudgeKey}` } {
  const f = FIELDS[k] as Field;
  const config = `judge.${k}` as const;
  if (k === 'allowSelfJudge') return { type: 'boolean', help: f.doc, config };
  const dflt = f.default === REQUIRED ? '' : ` (default ${f.default === null ? 'null' : String(f.default)})`;
  return { type: 'string', arg: f.arg, help: `judge: ${f.doc}${dflt}`, config, ...(f.parse ? { parse: f.parse } : {}) };
}

/** `agl train`'s judge flags, one per setting (`--judge-url`, `--judge-mode single`, `--allow-self-judge`), each into `judge.<key>`. */
export function judgeFlags(): { [K in JudgeKey as FlagName<K>]: CliOption & { config: `judge.${K}` } } {
  return Object.fromEntries(KEYS.map((k) => [k === 'allowSelfJudge' ? 'allow-self-judge' : `judge-${kebab(k)}`, flagOf(k)])) as never;
}
