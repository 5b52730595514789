/**
 * Every `agl` command's flags, declared once (protocol/cli-options.ts): each command's --help, its parsing and
 * defaults (daemon/commands/flags.ts), the README's flag lists and the command lines the extension, the samples and
 * the benchmarks build all read these. `agl train` and the engine flags are in protocol/train-options.ts, `agl optimize`'s
 * in protocol/optimize-options.ts.
 * A new flag goes in its command's table here, with its doc; `npm run docs:cli` then rewrites the README's lists.
 */
import type { CliCommand, CliOption, FlagsOf } from './cli-options.js';
import { GRADERS } from './eval.js';
import { judgeFlags } from './judge-settings.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES } from './store.js';
import { OPTIMIZE_COMMAND, OPTIMIZE_PROMOTE_COMMAND } from './optimize-options.js';
import { ENGINE_OPTIONS, TRAIN_COMMAND } from './train-options.js';

export const DEFAULT_PORT = 4747;
export const DEFAULT_HOST = '127.0.0.1';
/** The TF.js backends, fastest first: the order `--backend auto` tries them in. */
export const TFJS_BACKENDS = ['node-gpu', 'node', 'webgpu', 'wasm', 'cpu'] as const;

const DATA_DIR = {
  type: 'string',
  arg: 'DIR',
  help: 'the data dir: store, token, daemon.json (default ~/.agent-lightning, or AGL_DATA_DIR)',
} as const satisfies CliOption;
const STORE = {
  type: 'string',
  arg: 'SPEC',
  help: 'postgres://user:pass@host:port/db, or a SQLite file path (default <data-dir>/store.sqlite, or AGL_STORE)',
} as const satisfies CliOption;
const JSON_OUTPUT = { type: 'boolean', help: 'print JSON instead of text' } as const satisfies CliOption;
const PYTHON = { type: 'string', arg: 'PATH', help: 'the Python interpreter for Python agents (default python3)' } as const satisfies CliOption;
/** How `agl rollout` and `agl runner` reach a daemon (daemon/runner/connect.ts). */
const CONNECT = {
  url: { type: 'string', arg: 'URL', help: 'a daemon on another machine (or AGL_URL), with --token; default: the local daemon of --data-dir' },
  token: { type: 'string', arg: 'T', help: "that daemon's token (or AGL_TOKEN): the file `token` in its data dir" },
  'data-dir': DATA_DIR,
} as const satisfies Record<string, CliOption>;

export const SERVE_COMMAND = {
  name: 'serve',
  summary: 'start the daemon (store API, gateway, OTLP) in the foreground',
  usage: ['[--port N] [--host H] [--data-dir DIR] [--store SPEC] [options]'],
  about: 'Starts the Agent Lightning daemon (store API, gateway, OTLP receiver) in the foreground.',
  options: {
    port: { type: 'string', arg: 'N', help: `port to listen on (default ${DEFAULT_PORT}, or AGL_PORT); 0 picks a free one` },
    host: { type: 'string', arg: 'H', help: 'address to bind: the default is this machine only', default: DEFAULT_HOST },
    'data-dir': DATA_DIR,
    store: STORE,
    'body-limit': { type: 'string', arg: 'S', help: 'largest JSON request body', default: '16mb' },
    model: {
      type: 'string',
      arg: 'SPEC',
      help:
        'policy the gateway serves to agents whose resources name a local model: builtin:0.8m, builtin:5m, a checkpoint folder ' +
        '(agl sft / agl train) or a Hugging Face model folder (or AGL_POLICY); loaded on the first local LLM call. A checkpoint of a ' +
        "run with one policy per role (policies: in train.yaml) serves each role from its policy, the others from the run's " +
        'starting model, as the run did; one of a LoRA run (engine.lora) serves its adapters on that model (with --engine torch)',
    },
    'default-model': { type: 'string', arg: 'SPEC', help: 'that starting model, when it is no longer where the checkpoint says' },
    upstream: {
      type: 'string',
      arg: 'URL',
      help:
        "an OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp; base URL ending in /v1) the gateway forwards agents' calls " +
        'to, recording them (or OPENAI_BASE_URL); with --upstream-model',
    },
    'upstream-model': {
      type: 'string',
      arg: 'M',
      help: 'the model to ask it for (or AGL_MODEL): published as the latest LLM resource on start (API key read from OPENAI_API_KEY at call time, never stored)',
    },
    backend: { type: 'string', arg: 'B', help: 'TF.js backend for that policy (default: the fastest that loads; see agl doctor)' },
    ...ENGINE_OPTIONS,
    procs: { ...ENGINE_OPTIONS.procs, help: 'for training only (agl train): serving uses one rank' },
    'allowed-host': {
      type: 'string',
      arg: 'NAME',
      multiple: true,
      help:
        "a host name clients may call the daemon by, besides localhost, IP addresses and --host (repeatable; '.example.org' allows " +
        'its subdomains; or AGL_ALLOWED_HOSTS=a,b): other Host headers get 403, so web pages cannot reach the daemon through DNS names they control',
    },
    'upstream-key-env': {
      type: 'string',
      arg: 'NAME',
      multiple: true,
      help: 'an environment variable an upstream LLM resource may name as its apiKeyEnv (repeatable, or AGL_UPSTREAM_KEY_ENV=A,B; default OPENAI_API_KEY); others are refused',
    },
  },
  notes:
    'The engine flags are for the policy of --model (a torch engine is a child process, stopped with the daemon).\n' +
    'Clients authenticate with the token in <data-dir>/token. The data dir is kept 0700, its files 0600.\nStop with Ctrl-C or SIGTERM.',
} as const satisfies CliCommand;

export const STATUS_COMMAND = {
  name: 'status',
  summary: 'is the daemon running? where, with which store, holding what',
  usage: ['[--data-dir DIR] [--json]'],
  about:
    'Says whether the daemon of the data dir is running, its URL, pid, token file and store, and the counts of\n' +
    'rollouts, attempts, spans, resources, workers and training runs.',
  options: { 'data-dir': DATA_DIR, json: { type: 'boolean', help: 'print one JSON object instead' } },
  notes: 'Exit code: 0 running, 1 not running.',
} as const satisfies CliCommand;

export const ROLLOUTS_LIST_COMMAND = {
  name: 'rollouts list',
  summary: 'list rollouts, newest first, filtered by status, mode or agent',
  usage: ['[--status S[,S]] [--mode M] [--agent A] [--limit N] [--cursor C] [--json]'],
  options: {
    status: { type: 'string', arg: 'S[,S]', help: `one or more of ${ROLLOUT_STATUSES.join('|')}` },
    mode: { type: 'string', arg: 'M', help: ROLLOUT_MODES.join('|') },
    agent: { type: 'string', arg: 'A', help: 'only the rollouts of this agent' },
    limit: { type: 'string', arg: 'N', help: 'rollouts per page', default: '20' },
    cursor: { type: 'string', arg: 'C', help: 'continue a previous page (its last line names the cursor)' },
    json: { type: 'boolean', help: 'print the page as JSON' },
    'data-dir': DATA_DIR,
  },
} as const satisfies CliCommand;

export const ROLLOUTS_SHOW_COMMAND = {
  name: 'rollouts show',
  summary: 'one rollout, its attempts and a summary of its spans',
  usage: ['<id> [--json]'],
  options: { json: { type: 'boolean', help: 'print {rollout, attempts, spans} as JSON' }, 'data-dir': DATA_DIR },
  positionals: true,
} as const satisfies CliCommand;

export const LSP_COMMAND = {
  name: 'lsp',
  summary: 'language server (stdio) serving CodeLens with reward stats above agent functions',
  usage: ['[--stdio]'],
  about: 'Language server over stdin/stdout. The daemon endpoint comes from the client (initializationOptions.daemon).',
  options: {
    stdio: { type: 'boolean', help: 'speak LSP over stdin/stdout (the only transport)' },
    clientProcessId: { type: 'string', arg: 'PID', help: "the editor's process id (LSP clients pass it)" },
  },
} as const satisfies CliCommand;

/**
 * `agl sft`'s learning rate when --lr is not given, declared once (its help prints it; daemon/algorithm/sft-run.ts
 * sftDefaultLr uses it): a new built-in model starts from random weights and takes larger steps than a trained one.
 */
export const SFT_DEFAULT_LR = { newModel: 1e-3, trained: 1e-4 } as const;

export const SFT_COMMAND = {
  name: 'sft',
  summary: 'supervised warm-up from demonstrations (JSONL), writes a checkpoint for agl train --model',
  usage: ['--data demos.jsonl [options]'],
  about:
    'Supervised fine-tuning from demonstrations: {"prompt","completion"} or {"messages":[...]} per line, or dataset rows\n' +
    "(*.eval.jsonl) whose expected answer was corrected in the trajectory viewer: each trains the rollout's final LLM call\n" +
    'to answer the correction (rows not corrected are left out).',
  options: {
    data: { type: 'string', arg: 'FILE', help: 'demonstrations, or dataset rows with corrected answers (JSONL) (required)' },
    model: { type: 'string', arg: 'M', help: 'builtin:0.8m, builtin:5m, or a model/checkpoint folder', default: 'builtin:0.8m' },
    out: { type: 'string', arg: 'DIR', help: 'where the checkpoint goes (default <data-dir>/sft/<time>)' },
    steps: { type: 'string', arg: 'N', help: 'optimizer updates', default: '300' },
    'batch-size': { type: 'string', arg: 'B', help: 'sequences per update', default: '32' },
    lr: {
      type: 'string',
      arg: 'X',
      help: `learning rate (default ${SFT_DEFAULT_LR.newModel.toExponential()} for a new built-in model, else ${SFT_DEFAULT_LR.trained.toExponential()})`,
    },
    context: { type: 'string', arg: 'N', help: 'context length of a new built-in model', default: '128' },
    backend: { type: 'string', arg: 'B', help: 'auto, wasm, cpu, webgpu, node (default auto, or AGL_BACKEND)' },
    seed: { type: 'string', arg: 'N', help: 'shuffling seed', default: '1' },
    'init-seed': { type: 'string', arg: 'N', help: 'initialisation seed of a new built-in model', default: '1234' },
    'weights-only': { type: 'boolean', help: 'leave the optimizer state out of the checkpoint (a third of the size; to ship it)' },
    'data-dir': DATA_DIR,
    ...ENGINE_OPTIONS,
  },
} as const satisfies CliCommand;

export const EXPORT_COMMAND = {
  name: 'export',
  summary: "write a training run's transitions (credit, advantages, token ids) as JSONL for TRL/verl",
  usage: ['--format jsonl [--run ID] [--out FILE]'],
  about:
    'Writes the transitions of a training run (default: the latest) as JSON lines:\n' +
    '  {runId, step, groupId, rolloutId, attemptId, spanId, index, agentName, policy, policyVersion, reward, credit,\n' +
    '   advantage, promptTokenIds, completionTokenIds, completionLogprobs, prompt, completion}\n' +
    '  step: the training step, 1..N as agl train prints it\n' +
    "  policy: the policy that served the call and was trained on it (one policy per role: the role's own or the one it\n" +
    "  shares; else the run's one policy), policyVersion: that policy's updates when it served the call",
  options: {
    format: { type: 'string', arg: 'F', help: 'the only format for now', default: 'jsonl' },
    run: { type: 'string', arg: 'ID', help: 'training run id (agl status lists them); default the latest run' },
    out: { type: 'string', arg: 'FILE', help: 'default stdout' },
    'data-dir': DATA_DIR,
    store: STORE,
  },
} as const satisfies CliCommand;

export const ROLLOUT_COMMAND = {
  name: 'rollout',
  summary: 'run one rollout of an agent (file.ts#export or module:function) and print its spans and reward',
  usage: ["<agent> --task '<json>' [--mode train|val|test] [--timeout SECONDS] [--json]"],
  about:
    '<agent>: path/to/agent.ts#exportName (TypeScript/JavaScript, marked with rollout()) or module:function /\n' +
    'path/to/agent.py:function (Python). Runs it once against the daemon and prints its spans as a tree and its reward.',
  options: {
    task: { type: 'string', arg: 'JSON', help: 'the task input, as JSON (a bare string is taken as a JSON string)' },
    mode: { type: 'string', arg: 'M', help: ROLLOUT_MODES.join('|'), default: 'test' },
    timeout: { type: 'string', arg: 'SECONDS', help: 'fail the rollout after this long' },
    json: { type: 'boolean', help: 'print {rollout, attempts, spans, reward} as JSON instead of the tree' },
    ...CONNECT,
    python: PYTHON,
  },
  positionals: true,
} as const satisfies CliCommand;

export const RUNNER_COMMAND = {
  name: 'runner',
  summary: 'add N workers that claim rollouts and run agents in warm child processes',
  usage: ['[--workers N] [--agent AGENT] [--timeout SECONDS] [--grace SECONDS]'],
  options: {
    workers: { type: 'string', arg: 'N', help: 'parallel rollouts', default: '4' },
    agent: { type: 'string', arg: 'AGENT', help: 'only claim rollouts of this agent (and run it for rollouts naming none)' },
    timeout: { type: 'string', arg: 'S', help: 'kill a rollout after S seconds when its config sets no timeout' },
    grace: { type: 'string', arg: 'S', help: 'on Ctrl-C / SIGTERM, wait this long for running rollouts', default: '30' },
    'per-process': {
      type: 'string',
      arg: 'K',
      help: 'rollouts one TS/JS worker process runs at once (raise for many I/O-bound rollouts: --workers 256 --per-process 32 needs 8 node processes, not 256)',
      default: '1',
    },
    python: PYTHON,
    ...CONNECT,
  },
} as const satisfies CliCommand;

export const DOCTOR_COMMAND = {
  name: 'doctor',
  summary: "the engines: which TF.js backend loads and why the faster ones did not; the torch engine's Python, CUDA, ranks",
  usage: [`[--backend auto|${TFJS_BACKENDS.join('|')}] [--python P] [--json]`],
  about:
    'Loads the TF.js backend the daemon would use and reports why each faster one was not available; then reports the\n' +
    'torch engine: which Python it runs (--python, AGL_PYTHON, the venv of agl engine install torch, python3) and that\n' +
    "Python's torch, transformers, CUDA devices and distributed backends.",
  options: {
    backend: { type: 'string', arg: 'B', help: `the TF.js backend to load: auto (default, or AGL_BACKEND) or one of ${TFJS_BACKENDS.join(', ')}` },
    python: { type: 'string', arg: 'P', help: "the torch engine's Python to check" },
    json: { type: 'boolean', help: 'print one JSON object instead' },
  },
} as const satisfies CliCommand;

export const ENGINE_COMMAND = {
  name: 'engine',
  summary: "install the torch engine's Python environment (agl engine install torch), or show it (agl engine status)",
  usage: ['install torch [--venv DIR] [--python P] [--force]', 'status [--python P] [--json]'],
  about:
    'install torch: create a Python venv (default: one per user, <user cache>/agent-lightning/torch-venv, the cache being\n' +
    "  XDG_CACHE_HOME or ~/.cache, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows) and install the torch engine's\n" +
    '  pinned requirements into it (torch 2.13.0, transformers, trl, peft: ~1.5 GB on a CPU machine, several GB with\n' +
    "  CUDA); agl train --engine torch, the benches and the editor's daemon then find it by themselves, whatever their\n" +
    '  data dir\n' +
    'status: which Python the torch engine of a daemon keeping --data-dir runs (--python, AGL_PYTHON, the venv of agl\n' +
    '  engine install, a venv an older agl made in a data dir, python3) and what it has: torch and transformers\n' +
    '  versions, CUDA and GPUs, distributed backends',
  options: {
    venv: { type: 'string', arg: 'DIR', help: 'install: where the venv goes instead (then name it with --python or AGL_PYTHON)' },
    python: { type: 'string', arg: 'P', help: 'install: the Python 3.10+ to make it from (default python3); status: the Python to check' },
    force: { type: 'boolean', help: 'install: make it again even when it is there with these pins' },
    json: JSON_OUTPUT,
    'data-dir': { type: 'string', arg: 'DIR', help: 'status: the data dir asked about (default ~/.agent-lightning, or AGL_DATA_DIR)' },
  },
  positionals: true,
} as const satisfies CliCommand;

/** The judge's settings as flags (protocol/judge-settings.ts), but the self-judging switch: checking is not training. */
const { 'allow-self-judge': _selfJudge, ...JUDGE_SETTING_FLAGS } = judgeFlags();

export const JUDGE_CHECK_COMMAND = {
  name: 'judge check',
  summary: "how well an LLM judge agrees with the agent's own reward on a run's validation rollouts, before training on it",
  usage: ['<run id> [--step K] [--val FILE] [--config train.yaml] [--judge-* ...] [--json]', '<run id> --labels [--judge-* ...] [--json]'],
  about:
    'Scores the validation rollouts of a run (agl train validates before its first step: step 0) with the judge, as\n' +
    "training would (group mode: a task's rollouts across the validations in one call), reads each one's own reward,\n" +
    'and reports their agreement: pairwise accuracy (the pairs it orders as the agent does) and Spearman. The judge is\n' +
    "the run's own (its recorded judge: section), the --config file's, or the flags' (flags win). Writes nothing.\n" +
    "With --labels it checks the judge against people instead: the run's rollouts labelled in the trajectory viewer\n" +
    "(good/bad: true-positive and true-negative rates and Cohen's kappa, a score of 0.5 or more judged good; scores:\n" +
    'Spearman), and a position test: each pair of labelled rollouts of a task shown in both orders, how often the\n' +
    'verdict flips.',
  options: {
    val: { type: 'string', arg: 'FILE', help: "only the rollouts of the tasks in this file (JSONL with ids, e.g. the run's --val file)" },
    step: { type: 'string', arg: 'K', help: 'only the validation after step K (0: before training); default every validation' },
    limit: { type: 'string', arg: 'N', help: 'at most N rollouts, the newest first', default: '200' },
    labels: { type: 'boolean', help: "against people's labels (the viewer's good/bad or score) instead of the agent's own reward" },
    config: { type: 'string', arg: 'FILE', help: "a train.yaml whose judge: section to check (over the run's own)" },
    ...JUDGE_SETTING_FLAGS,
    json: JSON_OUTPUT,
    'data-dir': DATA_DIR,
    store: STORE,
  },
  positionals: true,
  notes: 'Exit code: 0 when it compared some pairs, 1 when there was nothing to compare (it says why), 2 on a usage error.',
} as const satisfies CliCommand;

/** How `agl eval` and `agl dataset` reach a store: a daemon (--url/--token), else the data dir's (or --store). */
const EVAL_CONNECT = {
  url: { type: 'string', arg: 'URL', help: 'run against the daemon at URL (with --token) instead of a store and gateway of its own' },
  token: { type: 'string', arg: 'T', help: "that daemon's token (or AGL_TOKEN)" },
  'data-dir': DATA_DIR,
  store: STORE,
} as const satisfies Record<string, CliOption>;

export const EVAL_COMMAND = {
  name: 'eval',
  summary: 'evaluate an agent on a dataset (graders, pass@k, a baseline run compared task by task): a test for CI',
  usage: [
    '<agent> --data F.eval.jsonl [--model SPEC | --upstream URL --upstream-model M] [--prompt NAME=VER]',
    '<agent> --data F [--repeat K] [--baseline RUN] [--min X] [--no-worse-than RUN] [--junit F] [--json]',
  ],
  about:
    "Runs the agent over the dataset's tasks through the runner and the gateway (each rollout recorded, as in training)\n" +
    "and grades each answer: by the row's grader against its `expected` (exact, contains, regex, number, json-schema,\n" +
    "judge), or by the agent's own reward. Records an eval run (its rollouts tagged with it: the trajectory viewer's run\n" +
    'filter), prints per-task results, the mean with its 95% interval and pass@k; --baseline compares task by task\n' +
    '(wins, losses, ties, the Wilcoxon signed-rank p-value) and says whether the change is significant (p < 0.05).',
  options: {
    data: { type: 'string', arg: 'FILE', help: 'the dataset: JSON lines { "id", "input", "expected", "grader", "tolerance" } (only input required)' },
    task: {
      type: 'string',
      arg: 'ID',
      multiple: true,
      help: "run only the dataset's task ID (its row's id, or line-N for a row without one; repeatable): the Test Explorer's run of some items",
    },
    repeat: { type: 'string', arg: 'K', help: 'rollouts per task: pass@k (a task passes when any of its K passes) and the mean of their scores', default: '1' },
    grader: {
      type: 'string',
      arg: 'G',
      help: `the grader of rows that name none: ${GRADERS.join(', ')} (default exact for rows with "expected", else reward)`,
    },
    tolerance: {
      type: 'string',
      arg: 'X',
      help: "the number grader's absolute tolerance for rows that give none (default 1e-6); it reads the answer's last number, commas only between thousands (1,234.5)",
    },
    pass: { type: 'string', arg: 'X', help: 'a task passes when its score reaches X (JUnit failures, pass@k)', default: '0.5' },
    prompt: {
      type: 'string',
      arg: 'NAME=VERSION',
      multiple: true,
      help: "the text llm.prompt(NAME) returns in these rollouts: an optimization's candidate id (pc-...) or `promoted` (repeatable)",
    },
    model: {
      type: 'string',
      arg: 'SPEC',
      help: "the agent's model as a local policy: builtin:0.8m, a checkpoint (agl sft / agl train) or a Hugging Face folder",
    },
    upstream: { type: 'string', arg: 'URL', help: "the agent's model: an OpenAI-compatible server (base URL ending in /v1) the gateway forwards to" },
    'upstream-model': { type: 'string', arg: 'M', help: 'the model to ask it for' },
    'upstream-key-env': { type: 'string', arg: 'VAR', help: "the environment variable holding that server's API key", default: 'OPENAI_API_KEY' },
    baseline: { type: 'string', arg: 'RUN', help: 'an earlier eval run to compare with, task by task (its id: agl eval printed it)' },
    min: { type: 'string', arg: 'SCORE', help: 'exit 1 when the mean score is below SCORE' },
    'no-worse-than': {
      type: 'string',
      arg: 'RUN',
      help: "exit 1 when the paired test says this run is significantly worse than that eval run on the tasks both have (the test's direction, not the means')",
    },
    junit: { type: 'string', arg: 'FILE', help: 'write JUnit XML: one testcase per task, a failure with the answer, the expectation and the reason' },
    ...JUDGE_SETTING_FLAGS,
    workers: { type: 'string', arg: 'N', help: 'runner workers in this process (0: rely on `agl runner` processes)', default: '4' },
    'rollout-timeout': { type: 'string', arg: 'S', help: 'a rollout running longer fails (its task scores 0, a JUnit error)', default: '120' },
    json: { type: 'boolean', help: 'print one JSON object: runId, mean, interval, passAtK, tasks, comparisons' },
    quiet: { type: 'boolean', help: 'no progress bar' },
    ...EVAL_CONNECT,
  },
  positionals: true,
  notes:
    'The judge grader takes the --judge-* settings (single mode: one call per answer, the row\'s "expected" and the task\'s\n' +
    'answer fields shown as the reference unless --judge-show-expected false).\n' +
    'Exit code: 0 passed; 1 below --min, significantly worse than --no-worse-than, or the run failed; 2 on a usage error\n' +
    'or a bad dataset (every bad row named by its line and field).',
} as const satisfies CliCommand;

export const DATASET_FROM_ROLLOUTS_COMMAND = {
  name: 'dataset from-rollouts',
  summary: 'write an eval dataset from recorded rollouts: each task input with the answer it recorded as "expected"',
  usage: ['--out F [--run RUN] [--status S] [--reward-min X] [--reward-max X] [--candidate C]'],
  about:
    "Selects rollouts with the store's rollout query and writes one row per rollout: its task input, its recorded\n" +
    'answer (the value the agent returned, else its final object) as "expected", its task id, and where it came from.\n' +
    'Rollouts that recorded no answer are skipped (and counted); a task is written once (the newest rollout of it), and\n' +
    'never when the file holds it already. Edit the expectations you disagree with, then agl eval. (The trajectory\n' +
    "viewer's Add to dataset writes the same rows, and lets you correct an answer first: agl sft trains on those.)",
  options: {
    out: { type: 'string', arg: 'FILE', help: 'the JSONL file to write (refused if it exists, unless --append)' },
    append: { type: 'boolean', help: 'add the rows to the end of --out (a task it holds already is left out)' },
    run: { type: 'string', arg: 'RUN', help: 'only the rollouts of this run (train, optimize or eval)' },
    status: { type: 'string', arg: 'S[,S]', help: `one or more of ${ROLLOUT_STATUSES.join('|')}` },
    mode: { type: 'string', arg: 'M', help: ROLLOUT_MODES.join('|') },
    agent: { type: 'string', arg: 'A', help: 'only the rollouts of this agent' },
    'reward-min': { type: 'string', arg: 'X', help: 'only rollouts whose final reward is at least X' },
    'reward-max': { type: 'string', arg: 'X', help: 'only rollouts whose final reward is at most X' },
    candidate: { type: 'string', arg: 'C', help: "only the rollouts an optimization ran with this candidate's prompts" },
    search: { type: 'string', arg: 'WORDS', help: 'only rollouts whose input or outputs hold these words' },
    grader: { type: 'string', arg: 'G', help: `the grader each row names: ${GRADERS.join(', ')} (default: none, so agl eval uses exact)` },
    limit: { type: 'string', arg: 'N', help: 'at most N rows, newest rollouts first', default: '1000' },
    json: { type: 'boolean', help: 'print what was written as JSON' },
    ...EVAL_CONNECT,
  },
} as const satisfies CliCommand;

/** Every `agl` command, in the order `agl --help` lists them: its summary, and what its --help prints (a subcommand each). */
export const AGL_COMMANDS = {
  serve: { summary: SERVE_COMMAND.summary, declarations: [SERVE_COMMAND] },
  status: { summary: STATUS_COMMAND.summary, declarations: [STATUS_COMMAND] },
  rollouts: { summary: 'list rollouts (filters) or show one with its attempts and spans', declarations: [ROLLOUTS_LIST_COMMAND, ROLLOUTS_SHOW_COMMAND] },
  lsp: { summary: LSP_COMMAND.summary, declarations: [LSP_COMMAND] },
  train: { summary: TRAIN_COMMAND.summary, declarations: [TRAIN_COMMAND] },
  sft: { summary: SFT_COMMAND.summary, declarations: [SFT_COMMAND] },
  export: { summary: EXPORT_COMMAND.summary, declarations: [EXPORT_COMMAND] },
  rollout: { summary: ROLLOUT_COMMAND.summary, declarations: [ROLLOUT_COMMAND] },
  runner: { summary: RUNNER_COMMAND.summary, declarations: [RUNNER_COMMAND] },
  doctor: { summary: DOCTOR_COMMAND.summary, declarations: [DOCTOR_COMMAND] },
  engine: { summary: ENGINE_COMMAND.summary, declarations: [ENGINE_COMMAND] },
  optimize: { summary: OPTIMIZE_COMMAND.summary, declarations: [OPTIMIZE_COMMAND, OPTIMIZE_PROMOTE_COMMAND] },
  eval: { summary: EVAL_COMMAND.summary, declarations: [EVAL_COMMAND] },
  dataset: { summary: DATASET_FROM_ROLLOUTS_COMMAND.summary, declarations: [DATASET_FROM_ROLLOUTS_COMMAND] },
  judge: {
    summary: "an LLM judge as the reward: agl judge check RUN scores a run's validation rollouts and its agreement",
    declarations: [JUDGE_CHECK_COMMAND],
  },
} as const satisfies Record<string, { summary: string; declarations: readonly CliCommand[] }>;
export type AglCommandName = keyof typeof AGL_COMMANDS;

/** Every declaration, in `agl --help`'s order: what the README's flag lists show. */
export const ALL_DECLARATIONS: readonly CliCommand[] = Object.values(AGL_COMMANDS).flatMap((c): readonly CliCommand[] => c.declarations);

export type EvalFlags = FlagsOf<typeof EVAL_COMMAND.options>;
export type DatasetFlags = FlagsOf<typeof DATASET_FROM_ROLLOUTS_COMMAND.options>;
export type ServeFlags = FlagsOf<typeof SERVE_COMMAND.options>;
export type SftFlags = FlagsOf<typeof SFT_COMMAND.options>;
export type RolloutFlags = FlagsOf<typeof ROLLOUT_COMMAND.options>;
export type RunnerFlags = FlagsOf<typeof RUNNER_COMMAND.options>;
