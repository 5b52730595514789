/**
 * The training configuration: the one schema `agl train` parses (its flags and `--config train.yaml`), that the
 * trainer runs on, that a training run records (TrainingRun.config holds the parsed config), and that the extension
 * and the dashboard read back. Sections: `model` (which policy, sampling), `training` (GRPO, credit, schedule),
 * `runtime` (workers, timeouts, checkpoints, TF.js backend), `engine` (tfjs or torch, ranks, device, a sampler) and
 * `judge` (an LLM judge as the reward: protocol/judge-settings.ts).
 * Unknown keys are errors that name the key, so a typo never silently trains with a default.
 * The GRPO variants and credit strategies are described in daemon/algorithm/README.md.
 */
import { z } from 'zod';
import { LoraSettingsSchema } from './engine.js';
import { GrpoConfig, GrpoGivenSchema } from './grpo-settings.js';
import { JudgeSection } from './judge-settings.js';

/** GRPO's settings are declared once, in grpo-settings.ts: `training.grpo` is GrpoConfig, a policy's own `grpo` GrpoGivenSchema. */
export { GRPO_VARIANTS, GrpoConfig, type GrpoConfigInput, type GrpoVariant } from './grpo-settings.js';

// ---- credit assignment (daemon/algorithm/credit.ts) ---------------------------------------------------------

export const AirRule = z.object({
  when: z.enum(['tool_succeeded', 'tool_failed']),
  reward: z.number(),
  /** Regular expression on the tool name; omitted = any tool. */
  tool: z.string().optional(),
});
export type AirRule = z.infer<typeof AirRule>;

export const CreditConfig = z.object({
  strategy: z.enum(['identical', 'discounted', 'last', 'combined']).default('identical'),
  gamma: z.number().min(0).max(1).default(0.9),
  intermediateWeight: z.number().default(1),
  air: z.array(AirRule).default([]),
});
export type CreditConfig = z.infer<typeof CreditConfig>;
export type CreditStrategy = CreditConfig['strategy'];

// ---- engines (daemon/algorithm/engine-config.ts) -----------------------------------------------------------

/**
 * Sampling from another server (a vLLM on GPUs, or another `agl serve --model`): the gateway forwards the agents'
 * calls there and records the token ids and log-probs it returns; after each update the engine's weights are saved
 * where that server can read them and it is told to load them.
 */
export const SamplerSection = z
  .object({
    /** OpenAI-compatible base URL (ending in /v1) of a server that returns token ids (vLLM: return_token_ids). */
    url: z.string().url(),
    /** The model name it serves the policy under. */
    model: z.string().min(1),
    /** Environment variable with its API key (sent as a bearer token); allowed for this run's gateway. */
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .nullable()
      .default(null),
    /** How each update reaches it; null: it keeps the weights it started with (a frozen sampler). */
    push: z
      .object({
        /** A folder both can read: each update is saved as <dir>/step-<n> (the last two are kept). */
        dir: z.string().min(1),
        /** POSTed after each save, with `body`'s {dir} and {step} filled in (JSON-escaped). */
        url: z.string().url(),
        /** agl serve: {"dir": "{dir}"} (the default). vLLM LoRA: {"lora_name": "policy", "lora_path": "{dir}", "load_inplace": true}. */
        body: z.string().default('{"dir": "{dir}"}'),
        /** Environment variable with a bearer token for `url` (agl serve: its token file's content). */
        tokenEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
          .nullable()
          .default(null),
      })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();
export type SamplerConfig = z.infer<typeof SamplerSection>;

/** Which engine holds, samples and trains the policy (daemon/model/policy-contract.ts); the daemon's side is the same for both. */
export const EngineSection = z
  .object({
    /** `tfjs`: in this process (the built-in models, a laptop); `torch`: PyTorch + transformers in a child process (real models, GPUs, ranks). */
    kind: z.enum(['tfjs', 'torch']).default('tfjs'),
    /** torch: ranks on this machine (torchrun: gloo on CPU, NCCL on CUDA). */
    procs: z.number().int().min(1).max(1024).default(1),
    /**
     * torch, several ranks: `none` (DDP: every rank holds the whole model and its Adam state) or `fsdp` (FSDP2: each
     * rank holds 1/ranks of the weights, gradients and moments, gathered a layer at a time: for a model whose weights
     * and moments do not fit one rank).
     */
    shard: z.enum(['none', 'fsdp']).default('none'),
    /** torch: machines taking part (each runs `agl train` with the same flags and its own --node-rank). */
    nodes: z.number().int().min(1).max(1024).default(1),
    /** torch, several machines: this machine's number (0: the one that runs the daemon, the runner and the loop). */
    nodeRank: z.number().int().min(0).default(0),
    /** torch, several machines: host:port of node 0's rendezvous (torchrun's static rendezvous; a port every node reaches). */
    rdzv: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'host:port')
      .nullable()
      .default(null),
    /** torch: `cpu`, `cuda` (rank r on GPU r) or `auto` (CUDA when torch sees a GPU). */
    device: z.enum(['cpu', 'cuda', 'auto']).default('cpu'),
    /** torch: the weights' dtype (AdamW moments stay float32). */
    dtype: z.enum(['float32', 'bfloat16', 'float16']).default('float32'),
    /** torch: transformers' attention implementation. */
    attention: z.enum(['sdpa', 'eager']).default('sdpa'),
    /** torch: recompute each decoder layer's activations in the backward pass (memory of one layer instead of all, ~1/3 more compute). */
    gradientCheckpointing: z.boolean().default(false),
    /** torch: the Python to run (default: AGL_PYTHON, else the venv of `agl engine install torch`, else python3). */
    python: z.string().nullable().default(null),
    /** torch: threads per rank (0: torch's default; torchrun sets 1 per rank). */
    threads: z.number().int().min(0).default(0),
    /** Sample from another server instead of the engine (either engine): see SamplerSection. */
    sampler: SamplerSection.nullable().default(null),
    /**
     * torch: every trained policy is a LoRA adapter of this shape (peft) on one frozen copy of the run's model, instead of
     * full weights: the run's one policy, or with `policies:` one adapter per role policy (untrained roles are served by
     * the base). The base is every adapter's KL reference. One rank.
     */
    lora: LoraSettingsSchema.nullable().default(null),
  })
  .strict();

export type EngineConfig = z.infer<typeof EngineSection>;

// ---- the sections and the whole config ---------------------------------------------------------------------

export const ModelSection = z
  .object({
    /** `builtin:0.8m`, `builtin:5m`, a Hugging Face model folder, or a checkpoint folder of ours. */
    name: z.string().default('builtin:0.8m'),
    /** Start from these weights (an `agl sft` or `agl train` checkpoint folder) instead of `name`'s. */
    init: z.string().nullable().default(null),
    temperature: z.number().min(0).max(5).default(1),
    topP: z.number().gt(0).max(1).optional(),
    maxTokens: z.number().int().min(1).default(32),
    /** Sampling for validation rollouts (0 = greedy). */
    valTemperature: z.number().min(0).max(5).default(0),
  })
  .strict();

export const TrainingSection = z
  .object({
    learningRate: z.number().positive().default(1e-4),
    /** Linear learning-rate warm-up over the first steps: a fresh Adam state's first updates are full-size in every weight. */
    warmupSteps: z.number().int().min(0).default(0),
    /** Tasks per step; each task is rolled out `groupSize` times. */
    batchSize: z.number().int().min(1).default(16),
    groupSize: z.number().int().min(1).default(8),
    epochs: z.number().positive().default(1),
    /** Hard cap on steps (0 = epochs decide). */
    maxSteps: z.number().int().min(0).default(0),
    /** Stop after this many minutes of training (0 = no limit); a final validation still runs. */
    maxMinutes: z.number().min(0).default(0),
    /** Validate every K steps (0 = only at the start and the end). */
    valEvery: z.number().int().min(0).default(5),
    /** Validation tasks used (0 = all). */
    valSize: z.number().int().min(0).default(0),
    checkpointEvery: z.number().int().min(1).default(1),
    /** Agent names to train (selective optimization), a regular expression; null = all. */
    agentMatch: z.string().nullable().default(null),
    /**
     * Train on people's labels (the viewer's good/bad or score, protocol/human-label.ts): a rollout with one takes it as
     * its final reward. Off by default: labels are there to check a judge (`agl judge check --labels`), not to train on.
     */
    useHumanLabels: z.boolean().default(false),
    /**
     * The judge's divergence monitor (daemon/algorithm/judge-divergence.ts): over this many of the last steps, the
     * judge's reward rising while a reward it cannot game (the agent's own, people's labels, held-out validation) falls
     * is said in the step's notes; with stopOnDivergence the run stops there (a final validation still runs).
     */
    divergenceWindow: z.number().int().min(3).default(5),
    stopOnDivergence: z.boolean().default(false),
    /**
     * What a GRPO group is: `task` (every trained call of a task's rollouts: each call's advantage against all the
     * calls of its task's episodes) or `task-role` (those calls split by role: a call's advantage against the same
     * role's calls of the same task, as AT-GRPO groups by agent). The same with one policy or several.
     */
    groupBy: z.enum(['task', 'task-role']).default('task'),
    grpo: GrpoConfig.default(GrpoConfig.parse({})),
    credit: CreditConfig.default(CreditConfig.parse({})),
    /** AIR on/off: when false, `credit.air` rules are ignored. */
    air: z.boolean().default(true),
    seed: z.number().int().default(1),
  })
  .strict();

export const RuntimeSection = z
  .object({
    workers: z.number().int().min(1).default(8),
    /** Seconds one rollout may run before it counts as failed (timeout). */
    rolloutTimeoutSeconds: z.number().positive().default(120),
    /** Where checkpoints go; default `<data dir>/runs/<run id>`. */
    checkpointDir: z.string().nullable().default(null),
    /** Model backend (`auto`, `wasm`, `cpu`, ...). */
    backend: z.string().default('auto'),
  })
  .strict();

/**
 * One policy per agent role (`policies:`): each entry names a role (an agent name, as `agentMatch` and the SDK's
 * `operation(..., { agentName })` name it) trained with weights of its own, or sharing another role's. Roles not listed
 * are served, untrained, by the default policy (`model.init` / `model.name`).
 */
export const PolicyEntry = z.union([
  z
    .object({
      /** Starting weights of this role's policy (a checkpoint or model folder); default: the run's model. */
      init: z.string().nullable().default(null),
      /** Its own learning rate; default training.learningRate. */
      learningRate: z.number().positive().nullable().default(null),
      /** GRPO settings over training.grpo's (the clip range, aggregation, KL...): its update only. */
      grpo: GrpoGivenSchema.default({}),
    })
    .strict(),
  z
    .object({
      /** Served and trained by this other role's policy: the shared policy learns from both roles' calls, once each. */
      shared: z.string().min(1),
    })
    .strict(),
]);
export type PolicyEntry = z.infer<typeof PolicyEntry>;

/**
 * The agent's own task files (`data:`), relative to the config file: what `agl train` uses when --train / --val are
 * not given, and what "Train This Agent" offers first for the agent whose train.yaml names them.
 */
export const DataSection = z
  .object({
    /** Training tasks (JSONL). */
    train: z.string().min(1).nullable().default(null),
    /** Validation tasks, held out (JSONL). */
    val: z.string().min(1).nullable().default(null),
  })
  .strict();

export const TrainConfig = z
  .object({
    model: ModelSection.default(ModelSection.parse({})),
    data: DataSection.default(DataSection.parse({})),
    training: TrainingSection.default(TrainingSection.parse({})),
    runtime: RuntimeSection.default(RuntimeSection.parse({})),
    engine: EngineSection.default(EngineSection.parse({})),
    /** Role -> its policy (own weights, or `shared: <role>`); empty: one policy serves and trains every role. */
    policies: z.record(z.string().min(1), PolicyEntry).default({}),
    /**
     * A call whose role cannot be decided (no agent name reached the gateway): `refuse` it with an error naming the
     * problem, or serve it with the `default` policy. Only with policies.
     */
    unassignedCalls: z.enum(['refuse', 'default']).default('refuse'),
    /** An LLM judge scores the rollouts (protocol/judge-settings.ts): instead of the agent's reward, or added to it with `weight`. */
    judge: JudgeSection.nullable().default(null),
  })
  .strict()
  .superRefine((c, ctx) => {
    const roles = Object.keys(c.policies);
    for (const [role, entry] of Object.entries(c.policies)) {
      if (!('shared' in entry)) continue;
      const owner = c.policies[entry.shared];
      if (!owner)
        ctx.addIssue({
          code: 'custom',
          path: ['policies', role, 'shared'],
          message: `names '${entry.shared}', which is not a role under policies (roles: ${roles.join(', ')})`,
        });
      else if ('shared' in owner)
        ctx.addIssue({
          code: 'custom',
          path: ['policies', role, 'shared'],
          message: `names '${entry.shared}', which itself shares '${owner.shared}': share the policy's own role`,
        });
    }
    if (c.engine.lora) {
      const why =
        c.engine.kind !== 'torch'
          ? 'needs engine.kind: torch (peft adapters; the tfjs engine trains full weights)'
          : c.engine.procs > 1
            ? 'runs on one rank for now: set engine.procs to 1'
            : c.engine.sampler
              ? 'cannot sample from engine.sampler (the sampler serves one model): drop one of them'
              : null;
      if (why) ctx.addIssue({ code: 'custom', path: ['engine', 'lora'], message: why });
    }
    if (roles.length && c.engine.sampler)
      ctx.addIssue({
        code: 'custom',
        path: ['policies'],
        message: 'one policy per role cannot sample from engine.sampler yet (the sampler serves one model): drop one of them',
      });
    const e = c.engine;
    const distributed =
      e.shard === 'fsdp' && e.procs * e.nodes < 2
        ? 'shards over several ranks: set engine.procs (or engine.nodes) above 1'
        : e.shard === 'fsdp' && e.lora
          ? 'trains full weights; LoRA adapters run on one rank: drop one of them'
          : e.nodes > 1 && e.kind !== 'torch'
            ? 'several machines need engine.kind: torch'
            : e.nodes > 1 && !e.rdzv
              ? 'several machines meet at a rendezvous: set engine.rdzv (host:port of node 0)'
              : e.nodes > 1 && (c.model.init ?? c.model.name).startsWith('builtin:')
                ? 'several machines train a model folder (model.name or model.init: a folder every node reads); the built-in models fit one machine'
                : e.nodeRank >= e.nodes
                  ? `engine.nodeRank ${e.nodeRank} is not below engine.nodes ${e.nodes}`
                  : null;
    if (distributed) ctx.addIssue({ code: 'custom', path: ['engine', e.nodes > 1 || e.nodeRank ? 'nodes' : 'shard'], message: distributed });
    const trained = c.training.agentMatch;
    if (roles.length && trained !== null) {
      const re = new RegExp(trained);
      for (const role of roles) {
        if (!re.test(role))
          ctx.addIssue({
            code: 'custom',
            path: ['policies', role],
            message: `training.agentMatch ${trained} leaves role '${role}' out: its policy would never train (drop agentMatch: with policies, the roles listed are the ones trained)`,
          });
      }
    }
  });
export type TrainConfig = z.infer<typeof TrainConfig>;
export type TrainConfigInput = z.input<typeof TrainConfig>;

/**
 * A training run's recorded config (TrainingRun.config: `agl train` stores the parsed one) read back with this schema,
 * or null when it does not parse (a run recorded by a version with other keys): readers then show what they know.
 */
export function recordedTrainConfig(config: unknown): TrainConfig | null {
  const r = TrainConfig.safeParse(config ?? {});
  return r.success ? r.data : null;
}
