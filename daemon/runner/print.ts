/**
 * Prints an attempt's spans for the terminal: an indented tree in time order with what matters per
 * span (LLM calls: model, tokens, finish reason, answer; prompts read: source, version, sha; rewards; messages; errors).
 */
import { callMessages } from '../../protocol/episode-text.js';
import { isLlmCallSpan, repairedParents, rewardOfSpan } from '../../protocol/span-reading.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function describe(s: Span): string {
  const a = s.attributes;
  const ms = s.endTime !== null ? `${Math.round(s.endTime - s.startTime)} ms` : 'open';
  const parts = [s.name, `(${ms})`];
  if (isLlmCallSpan(s)) {
    parts.push(
      `model=${String(a[GENAI.requestModel] ?? '?')}`,
      `tokens=${String(a[GENAI.usageInputTokens] ?? '?')}+${String(a[GENAI.usageOutputTokens] ?? '?')}`,
    );
    const finish = a[GENAI.responseFinishReasons];
    if (Array.isArray(finish)) parts.push(`finish=${finish.join(',')}`);
    const m = callMessages(s).response[0]; // protocol/episode-text.ts: the one reading of a call's messages
    if (m?.toolCalls.length) parts.push(`-> ${m.toolCalls.map((t) => `${t.name}(${clip(t.args, 60)})`).join(', ')}`);
    else if (m?.text) parts.push(`-> ${JSON.stringify(clip(m.text, 100))}`);
  }
  if (s.name === SPAN.prompt)
    parts.push(`${String(a[AGL.promptName])}: ${String(a[AGL.promptSource])} ${String(a[AGL.promptVersion])} sha ${String(a[AGL.promptSha])}`);
  const reward = rewardOfSpan(s);
  if (reward) parts.push(`${reward.name ?? 'reward'}=${String(reward.value)}`);
  if (typeof a[AGL.message] === 'string') parts.push(JSON.stringify(clip(a[AGL.message] as string, 100)));
  if (s.status.code === 'error') parts.push(`ERROR ${clip(s.status.message ?? '', 160)}`);
  return parts.join('  ');
}

export function formatSpanTree(spans: Span[]): string {
  const parents = repairedParents(spans);
  const children = new Map<string | null, Span[]>();
  for (const s of [...spans].sort((x, y) => x.startTime - y.startTime || x.sequenceId - y.sequenceId)) {
    const p = parents.get(s.spanId) ?? null;
    if (!children.has(p)) children.set(p, []);
    children.get(p)!.push(s);
  }
  const lines: string[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      lines.push(`${'  '.repeat(depth)}${describe(s)}`);
      if (depth < 50) walk(s.spanId, depth + 1);
    }
  };
  walk(null, 0);
  return lines.join('\n');
}
