/**
 * Turns one gateway call into one span (GenAI semantic conventions + our agl.* attributes: rollout, attempt,
 * resources version, what answered the call (agl.served.*), token ids, log-probs). The stores group-commit concurrent
 * addSpans calls, so each call writes its span directly and many concurrent calls still share one durable write.
 */
import type { Attributes, AttributeValue, SpanInput } from '../../protocol/store.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { CallRequest, CallResult } from './gateway-backend.js';
import { newSpanId, parseTraceparent, rootSpanIdForAttempt, traceIdForAttempt } from '../../protocol/ids.js';

export interface CallContext {
  rolloutId: string;
  attemptId: string;
  traceparent?: string;
  resourcesId: string | null;
  resourcesVersion: number | null;
  startTime: number;
  streamed: boolean;
  /** The role the call named (x-agl-agent), if any. */
  role?: string | null;
  /** The policy that served it and its version, when the run serves roles from their own policies. */
  policy?: { name: string; version: number | null } | null;
  /** The local model's training updates when no per-role policy served the call (null: untrained or unknown). */
  updates?: number | null;
}

/** What answered the call: the local policy (by role, or the model its resource names) or the upstream model. */
function servedBy(req: CallRequest, call: CallContext, result: CallResult | null): { name: string; updates: number | null } {
  const local = result?.local ?? req.resource.backend === 'local';
  if (!local) return { name: String(result?.response.model ?? req.body.model ?? req.resource.model), updates: null };
  return call.policy ? { name: call.policy.name, updates: call.policy.version } : { name: req.resource.model, updates: call.updates ?? null };
}

function set(attrs: Attributes, key: string, value: unknown): void {
  if (value === undefined) return;
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') attrs[key] = value;
  else if (Array.isArray(value) && value.every((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v))) attrs[key] = value as AttributeValue;
  else attrs[key] = JSON.stringify(value);
}

export function buildCallSpan(req: CallRequest, call: CallContext, result: CallResult | null, error: Error | null): SpanInput {
  const { body } = req;
  const attrs: Attributes = {};
  set(attrs, GENAI.operationName, req.kind === 'chat' ? 'chat' : 'text_completion');
  set(attrs, GENAI.system, (result?.local ?? req.resource.backend === 'local') ? 'agl' : 'openai');
  set(attrs, GENAI.requestModel, body.model ?? req.resource.model);
  set(attrs, GENAI.requestTemperature, body.temperature ?? req.resource.samplingParams?.temperature);
  set(attrs, GENAI.requestTopP, body.top_p ?? req.resource.samplingParams?.topP);
  set(attrs, GENAI.requestTopK, body.top_k ?? req.resource.samplingParams?.topK);
  set(attrs, GENAI.requestMaxTokens, body.max_completion_tokens ?? body.max_tokens ?? req.resource.samplingParams?.maxTokens);
  set(attrs, GENAI.requestSeed, body.seed);
  if (body.stop !== undefined && body.stop !== null) set(attrs, GENAI.requestStopSequences, typeof body.stop === 'string' ? [body.stop] : body.stop);
  set(attrs, GENAI.inputMessages, req.kind === 'chat' ? JSON.stringify(body.messages ?? []) : JSON.stringify(body.prompt ?? ''));
  if (Array.isArray(body.tools) && body.tools.length) set(attrs, GENAI.toolDefinitions, JSON.stringify(body.tools));
  set(attrs, AGL.rolloutId, call.rolloutId);
  set(attrs, AGL.attemptId, call.attemptId);
  set(attrs, AGL.resourcesId, call.resourcesId);
  set(attrs, AGL.resourcesVersion, call.resourcesVersion);
  set(attrs, AGL.streamed, call.streamed);
  set(attrs, AGL.latencyMs, Date.now() - call.startTime);
  if (call.role) set(attrs, AGL.agentName, call.role);
  if (call.policy) {
    set(attrs, AGL.policyName, call.policy.name);
    set(attrs, AGL.policyVersion, call.policy.version);
  }
  const served = servedBy(req, call, result);
  set(attrs, AGL.servedBy, served.name);
  set(attrs, AGL.servedUpdates, served.updates);
  if (result) {
    const r = result.response;
    const choices = (r.choices as Record<string, unknown>[] | undefined) ?? [];
    set(attrs, GENAI.responseModel, r.model);
    set(attrs, GENAI.responseId, r.id);
    set(
      attrs,
      GENAI.responseFinishReasons,
      choices.map((c) => String(c.finish_reason ?? '')),
    );
    const usage = r.usage as { prompt_tokens?: number; completion_tokens?: number } | undefined;
    set(attrs, GENAI.usageInputTokens, usage?.prompt_tokens ?? result.promptTokenIds?.length);
    set(attrs, GENAI.usageOutputTokens, usage?.completion_tokens ?? result.completionTokenIds?.reduce((s, ids) => s + ids.length, 0));
    set(attrs, GENAI.outputMessages, JSON.stringify(choices.map((c) => (req.kind === 'chat' ? c.message : { role: 'assistant', content: c.text }))));
    set(attrs, AGL.localPolicy, result.local);
    set(attrs, AGL.promptTokenIds, result.promptTokenIds);
    set(attrs, AGL.completionTokenIds, result.completionTokenIds?.[0]);
    set(attrs, AGL.completionLogprobs, result.completionLogprobs?.[0]);
    // Several choices (n > 1): every choice's ids too (the first choice above is the one training uses).
    // (arrays of arrays: set() stores them as JSON)
    if ((result.completionTokenIds?.length ?? 0) > 1) set(attrs, AGL.choicesTokenIds, result.completionTokenIds);
    if ((result.completionLogprobs?.length ?? 0) > 1) set(attrs, AGL.choicesLogprobs, result.completionLogprobs);
  }
  const parent = parseTraceparent(call.traceparent);
  return {
    rolloutId: call.rolloutId,
    attemptId: call.attemptId,
    traceId: parent?.traceId ?? traceIdForAttempt(call.attemptId),
    spanId: newSpanId(),
    parentSpanId: parent?.spanId ?? rootSpanIdForAttempt(call.attemptId),
    name: SPAN.llmCall,
    kind: 'client',
    startTime: call.startTime,
    endTime: Date.now(),
    attributes: attrs,
    events: [],
    status: error ? { code: 'error', message: error.message } : { code: 'ok' },
    resource: { 'service.name': 'agl-gateway' },
  };
}
