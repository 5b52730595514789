/** Builders of stored-shape spans for the algorithm tests (what the gateway, SDK and runner write). */
import type { Span } from '../../protocol/store.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';

let seq = 0;
export function span(p: Partial<Span> & { spanId: string; name: string; startTime: number }): Span {
  return {
    rolloutId: 'r1',
    attemptId: 'a1',
    sequenceId: ++seq,
    traceId: 't1',
    parentSpanId: null,
    kind: 'internal',
    endTime: p.startTime + 1,
    attributes: {},
    events: [],
    status: { code: 'unset' },
    resource: {},
    ...p,
  };
}
export function llmCall(spanId: string, startTime: number, extra: Partial<Span> & { agent?: string; prompt?: number[]; completion?: number[] } = {}): Span {
  const { agent, prompt = [1, 2], completion = [3, 4], ...rest } = extra;
  return span({
    spanId,
    name: SPAN.llmCall,
    startTime,
    ...rest,
    attributes: {
      [GENAI.operationName]: 'chat',
      [AGL.promptTokenIds]: prompt,
      [AGL.completionTokenIds]: JSON.stringify(completion),
      [AGL.completionLogprobs]: completion.map(() => -0.5),
      ...(agent ? { [AGL.agentName]: agent } : {}),
      ...(rest.attributes ?? {}),
    },
  });
}
export function reward(spanId: string, startTime: number, value: number, parentSpanId: string | null = null): Span {
  return span({ spanId, name: SPAN.reward, startTime, parentSpanId, attributes: { [AGL.rewardValue]: value } });
}
export function tool(spanId: string, startTime: number, succeeded: boolean, name = 'calc'): Span {
  return span({ spanId, name: SPAN.tool, startTime, attributes: { [GENAI.toolName]: name }, status: { code: succeeded ? 'ok' : 'error' } });
}
