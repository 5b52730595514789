/**
 * Span conventions: the attribute and span names every producer (gateway, SDK, OTLP exporters) writes
 * and every consumer (adapter, viewer, CodeLens) reads. OpenTelemetry GenAI semantic conventions
 * (gen_ai.*) for LLM and tool calls; our own `agl.*` namespace for what they do not cover.
 * Documented for users in the README ("Span conventions").
 */

/** Span names. */
export const SPAN = {
  /** One LLM call through the gateway (GenAI convention: "{operation} {model}", we keep a stable name). */
  llmCall: 'gen_ai.chat',
  reward: 'agentlightning.reward',
  message: 'agentlightning.message',
  object: 'agentlightning.object',
  exception: 'agentlightning.exception',
  operation: 'agentlightning.operation',
  annotation: 'agentlightning.annotation',
  /** A tool execution (GenAI convention operation name `execute_tool`). */
  tool: 'gen_ai.execute_tool',
  /** The root span of a rollout's agent function run by the runner. */
  agentRun: 'agentlightning.rollout',
  /** A prompt the agent read (`llm.prompt(name, seed, vars)`): which text of it, and where that text came from. */
  prompt: 'agentlightning.prompt',
  /**
   * One call to an LLM judge (train.yaml `judge:`), recorded on each rollout it judged (a copy per rollout, one call id):
   * never an LLM call of the agent's (no transition, no export), its tokens and cost its own (AGL.judge*).
   */
  judge: 'agentlightning.judge',
} as const;

/** OpenTelemetry GenAI semantic convention attributes. */
export const GENAI = {
  operationName: 'gen_ai.operation.name', // 'chat' | 'text_completion' | 'execute_tool'
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  requestTopK: 'gen_ai.request.top_k',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestSeed: 'gen_ai.request.seed',
  requestStopSequences: 'gen_ai.request.stop_sequences',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  /** JSON-encoded chat messages sent (GenAI `gen_ai.input.messages`). */
  inputMessages: 'gen_ai.input.messages',
  /** JSON-encoded choices returned (GenAI `gen_ai.output.messages`). */
  outputMessages: 'gen_ai.output.messages',
  /** JSON-encoded tool definitions offered to the model (GenAI `gen_ai.tool.definitions`). */
  toolDefinitions: 'gen_ai.tool.definitions',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  /** A tool span's input and output, JSON-encoded (GenAI `gen_ai.tool.call.arguments` / `.result`). */
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  agentName: 'gen_ai.agent.name',
} as const;

/** Our namespace. Arrays of numbers are stored as JSON arrays in attributes. */
export const AGL = {
  rolloutId: 'agl.rollout_id',
  attemptId: 'agl.attempt_id',
  resourcesId: 'agl.resources.id',
  resourcesVersion: 'agl.resources.version',
  promptTokenIds: 'agl.prompt.token_ids',
  completionTokenIds: 'agl.completion.token_ids',
  /** Per-token log-probs of the completion under the policy that sampled it. */
  completionLogprobs: 'agl.completion.logprobs',
  /** Calls with several choices (n > 1): every choice's token ids / log-probs, as a JSON array of arrays
   *  (choice i at index i). `agl.completion.token_ids` / `.logprobs` keep the first choice's, which is the
   *  one the adapter trains on. */
  choicesTokenIds: 'agl.completion.choices.token_ids',
  choicesLogprobs: 'agl.completion.choices.logprobs',
  /** true when the gateway served the call from the local policy (token ids and logprobs are exact). */
  localPolicy: 'agl.policy.local',
  streamed: 'agl.streamed',
  latencyMs: 'agl.latency_ms',
  /** Reward spans: primary value and optional named components. */
  rewardValue: 'agl.reward.value',
  rewardName: 'agl.reward.name',
  /** JSON object of named reward components, e.g. {"exact": 1, "format": 0.5}. */
  rewardComponents: 'agl.reward.components',
  /** `true` on the reward span that holds the value the agent function returned (the runner writes it):
   *  that span is the attempt's final reward whatever follows it (protocol/span-reading.ts). */
  rewardFinal: 'agl.reward.final',
  /** On a reward span: what the grader said about the answer, in words (`emitReward(v, { feedback })`); a prompt
   *  optimization's reflection reads it (protocol/span-reading.ts rolloutFeedback). */
  rewardFeedback: 'agl.reward.feedback',
  /** On a reward span: who gave it; `judge` for the reward an LLM judge gave (its feedback the judge's explanation), `human` for a person's label, absent for the agent's own. */
  rewardSource: 'agl.reward.source',
  /** On a person's label (source `human`, protocol/human-label.ts): `good`, `bad` or `score` (the value is the score). */
  rewardLabel: 'agl.reward.label',
  /** `true` on a reward the agent marked final (`emitReward(v, { final: true })`, a returned `{ reward, final: true }`): the
   *  attempt's final reward, which no judge replaces or adds to (protocol/judge-reading.ts). */
  rewardLocked: 'agl.reward.locked',
  /** Judge spans (SPAN.judge): the call's id (shared by its copies on each rollout it judged), the judge's model and mode
   *  (`group` | `single`), the rollout ids in the order the judge was shown them (JSON array) and this rollout's place in
   *  it (1-based), the answer as the judge gave it, the tries it took, its tokens (the whole call's) and cost (null
   *  without prices), and the rubric's sha (first 12 hex of its sha256). A failed call's span has an error status. */
  judgeCallId: 'agl.judge.call_id',
  judgeModel: 'agl.judge.model',
  judgeMode: 'agl.judge.mode',
  judgeOrder: 'agl.judge.order',
  judgePosition: 'agl.judge.position',
  judgeAnswer: 'agl.judge.answer',
  judgeAttempts: 'agl.judge.attempts',
  judgeInputTokens: 'agl.judge.input_tokens',
  judgeOutputTokens: 'agl.judge.output_tokens',
  judgeCost: 'agl.judge.cost',
  judgeRubricSha: 'agl.judge.rubric_sha',
  /** On a judge span: this rollout's score from the judge (0-1) and the judge's words about it. */
  judgeScore: 'agl.judge.score',
  judgeExplanation: 'agl.judge.explanation',
  /** A retest (judge.retest): on the judge span of a rollout a group call showed twice, the second copy's place
   *  (1-based, in agl.judge.order) and its score; `true` on the span of a single-mode call that scored a rollout a
   *  second time. A retest's score is never a reward: the pair measures how far the judge agrees with itself. */
  judgeRetestPosition: 'agl.judge.retest_position',
  judgeRetestScore: 'agl.judge.retest_score',
  judgeRetest: 'agl.judge.retest',
  /** Prompt spans (SPAN.prompt, one per `llm.prompt` call; protocol/prompt-template.ts): the prompt's name; its text's
   *  source (`candidate` | `promoted` | `seed`); its version (the candidate id, the promoted candidate's id or
   *  `promoted`, or `seed`); the first 12 hex digits of the sha256 of the text (before its vars are filled in); the
   *  text itself, unfilled; and, when the seed is a file, that file (absolute, on the runner's machine). */
  promptName: 'agl.prompt.name',
  promptSource: 'agl.prompt.source',
  promptVersion: 'agl.prompt.version',
  promptSha: 'agl.prompt.sha',
  promptTemplate: 'agl.prompt.template',
  promptFile: 'agl.prompt.file',
  /** Message / object payloads. */
  message: 'agl.message',
  objectJson: 'agl.object.json',
  /** What an emitted object is, named by the agent. `final` or `<name>.final` (`sql.final`): the episode's answer;
   *  `expected` or `<name>.expected`: the output the agent scored it against (protocol/span-reading.ts episodeAnswer). */
  objectKind: 'agl.object.kind',
  /** On the rollout's root span: the JSON of what the agent function returned when that was not a number (a
   *  number is the final reward instead); the episode's answer before any emitted object. */
  rolloutResult: 'agl.rollout.result',
  exceptionType: 'exception.type',
  exceptionMessage: 'exception.message',
  exceptionStacktrace: 'exception.stacktrace',
  /** Source location of the code that made the call (for "jump to code"). */
  codeFilepath: 'code.filepath',
  codeLineno: 'code.lineno',
  /** Name of the agent (sub-agent) that made the call, for selective optimization. */
  agentName: 'agl.agent.name',
  /** The policy that served an LLM call (one policy per role: the role's own, a shared one, or the default). */
  policyName: 'agl.policy.name',
  /** That policy's version: its training updates so far. */
  policyVersion: 'agl.policy.version',
  /** What answered an LLM call, on every call the gateway records: the local policy's name (one policy per role or
   *  not), or the upstream model that answered. */
  servedBy: 'agl.served.by',
  /** The training updates the local policy that answered had (null: untrained, or an upstream model). */
  servedUpdates: 'agl.served.updates',
  toolSucceeded: 'agl.tool.succeeded',
} as const;

/** Reward emitted through agent-lightning v0's attribute shape (`agentlightning.reward.{i}.name/.value`),
 *  accepted on OTLP ingest and by every reader (protocol/span-reading.ts). */
export const AGL_V0_REWARD_PREFIX = 'agentlightning.reward';

/** Headers that tie a gateway call to its rollout when the URL carries no ids. */
export const HEADERS = {
  rolloutId: 'x-agl-rollout-id',
  attemptId: 'x-agl-attempt-id',
  /** The agent (role) making the call: the SDK sets it from the current operation's agent name; the gateway routes by it. */
  agent: 'x-agl-agent',
} as const;
