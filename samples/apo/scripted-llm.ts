/**
 * A scripted LLM server for the order desk (world.ts): a real HTTP server speaking the OpenAI chat completions
 * protocol (JSON and SSE streaming, with usage tokens), reached through the real `openai` client and through the
 * daemon's gateway, so prompt optimization is tested and demonstrated without a capable model (and without a network).
 *   agent model (any model name but the two below): answers by what the prompt it is given says. It reads the record,
 *     the question (or the field and value a planner chose) and the house rules the prompt states; it follows a rule
 *     only when it is stated, and otherwise answers as a model would by default. With probability `slip` (seeded by
 *     the request) it answers "unknown" instead: the noise a search must not mistake for progress.
 *   `desk-optimizer`: uses what it is shown. It takes the prompt to rewrite (the first ``` block of its request) and
 *     writes into it the rules its request gives evidence for (feedback naming a broken aspect, or a rule written out
 *     in a critique or in the other version of a merge), only those the prompt's job covers (a prompt given the
 *     question picks fields, one given the record or a value writes answers), each in one of its wordings (the request
 *     picks which, as a real model rephrases). Asked for a critique, it lists them.
 *     Sometimes (`dropPlaceholder`) it drops the prompt's last line with a placeholder, as real models do, and sometimes
 *     (`unfenced`) it answers with the bare prompt, no ``` fence.
 *   `desk-optimizer-blind`: ignores the evidence: it adds a sentence that changes nothing a grader checks.
 * Seeded: the same request always gets the same answer. `faults` makes chosen optimizer requests fail (429, 500, a
 * timeout, an empty or a cut-off answer, a refused key).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BLIND_SENTENCES,
  evidencedRules,
  fencedBlocks,
  FIELDS,
  type Field,
  fieldFor,
  formatValue,
  jobsOf,
  kindOf,
  type OrderRecord,
  type Rule,
  statedRules,
  withRules,
} from './world.js';

export const OPTIMIZER_MODEL = 'desk-optimizer';
export const BLIND_OPTIMIZER_MODEL = 'desk-optimizer-blind';
export const AGENT_MODEL = 'desk-agent';

export type Fault = 'rate-limit' | 'server-error' | 'timeout' | 'empty' | 'unparseable' | 'unauthorized';

export interface ScriptedOptions {
  seed?: number;
  /** Probability that the agent model answers "unknown" (default 0.02). */
  slip?: number;
  /** Probability that the optimizer drops a placeholder line (default 0.15). */
  dropPlaceholder?: number;
  /** Probability that the optimizer answers without a ``` fence (default 0.2). */
  unfenced?: number;
  /** The fault, if any, of optimizer request `n` (0, 1, ... in arrival order, retries included). */
  faults?: (n: number) => Fault | null;
  /** How long a `timeout` fault holds its answer (default 5 s). */
  timeoutHoldMs?: number;
}

export interface ScriptedLlm {
  /** The base URL (ends in /v1). */
  url: string;
  /** Requests served, by model kind. */
  counts: { agent: number; optimizer: number };
  close(): Promise<void>;
}

type Message = { role: string; content: unknown };
const textOf = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';

/** A number in [0, 1) fixed by the seed, a salt and the request. */
function draw(seed: number, salt: string, request: string): number {
  return createHash('sha256').update(`${seed}\u0000${salt}\u0000${request}`).digest().readUInt32BE(0) / 2 ** 32;
}

const line = (text: string, label: string): string | null => new RegExp(`^${label}:[ \\t]*(.*)$`, 'm').exec(text)?.[1]?.trim() ?? null;

function parseRecord(text: string): OrderRecord | null {
  const pairs = text.split(';').map((p) => p.split('=').map((x) => x.trim()));
  const rec = Object.fromEntries(pairs.filter((p) => p.length === 2)) as Partial<OrderRecord>;
  return FIELDS.every((f) => typeof rec[f] === 'string') ? (rec as OrderRecord) : null;
}

/** The agent model: reads the request, follows the rules its prompt states. */
export function agentAnswer(text: string): string {
  const rules = statedRules(text);
  const question = line(text, 'Question'),
    record = line(text, 'Record'),
    field = line(text, 'Field'),
    value = line(text, 'Value');
  if (field !== null && value !== null) return (FIELDS as readonly string[]).includes(field) ? formatValue(field as Field, value, rules) : value;
  const kind = question === null ? null : kindOf(question);
  if (kind === null) return 'I do not know.';
  if (record === null) return fieldFor(kind, rules);
  const rec = parseRecord(record);
  if (!rec) return 'I cannot read the record.';
  const f = fieldFor(kind, rules);
  return formatValue(f, rec[f], rules);
}

/** The optimizer model (informed or blind): a new prompt, a merged one, or a critique. */
export function optimizerAnswer(text: string, o: { blind: boolean; seed: number; dropPlaceholder: number; unfenced: number }): string {
  const blocks = fencedBlocks(text);
  const merge = blocks.length >= 3;
  const current = (merge ? blocks[1] : blocks[0]) ?? '';
  const blindSentence = BLIND_SENTENCES.filter((s) => !current.includes(s))[Math.floor(draw(o.seed, 'blind', text) * BLIND_SENTENCES.length)] ?? null;
  const rules = merge ? statedRules(blocks[2]!) : evidencedRules(text, current).filter((r) => jobsOf(current).has(r.job));
  // How it words each rule, fixed by the request (a model rephrases from one request to the next).
  const wording = (r: Rule) => r.sentences[Math.floor(draw(o.seed, `word ${r.id}`, text) * r.sentences.length)]!;
  if (/Reply with the critique/i.test(text)) {
    if (o.blind) return blindSentence ? `The instructions could say:\n- ${blindSentence}` : 'The instructions look right.';
    return rules.length
      ? `The instructions miss these rules of the task:\n${rules.map((r) => `- ${wording(r)}`).join('\n')}`
      : 'The instructions look right; the failures look like slips.';
  }
  let next = o.blind ? addSentence(current, blindSentence) : withRules(current, rules, wording);
  if (draw(o.seed, 'drop', text) < o.dropPlaceholder) next = dropPlaceholderLine(next);
  return draw(o.seed, 'fence', text) < o.unfenced ? next : `Here is the new version:\n\n\`\`\`\n${next}\n\`\`\`\n`;
}

function addSentence(prompt: string, sentence: string | null): string {
  if (!sentence) return prompt;
  const cut = prompt.indexOf('\n\n');
  return cut < 0 ? `${prompt}\n${sentence}` : `${prompt.slice(0, cut)}\n${sentence}${prompt.slice(cut)}`;
}

function dropPlaceholderLine(prompt: string): string {
  const lines = prompt.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) if (/\{[A-Za-z_]/.test(lines[i]!)) return [...lines.slice(0, i), ...lines.slice(i + 1)].join('\n');
  return prompt;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;

export async function startScriptedLlm(opts: ScriptedOptions = {}): Promise<ScriptedLlm> {
  const o = { seed: 0, slip: 0.02, dropPlaceholder: 0.15, unfenced: 0.2, timeoutHoldMs: 5_000, ...opts };
  const counts = { agent: 0, optimizer: 0 };
  const holds = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        const data = [AGENT_MODEL, OPTIMIZER_MODEL, BLIND_OPTIMIZER_MODEL].map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' }));
        return json(res, 200, { object: 'list', data });
      }
      let body: { model?: string; messages?: Message[]; stream?: boolean; stream_options?: { include_usage?: boolean } };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return json(res, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
      }
      if (!req.url?.endsWith('/chat/completions') || !Array.isArray(body.messages))
        return json(res, 404, { error: { message: `no route ${req.method} ${req.url} (only chat completions)`, type: 'invalid_request_error' } });
      const model = String(body.model ?? AGENT_MODEL);
      const text = body.messages.map((m) => textOf(m.content)).join('\n');
      const optimizer = model === OPTIMIZER_MODEL || model === BLIND_OPTIMIZER_MODEL;
      let answer: string;
      if (optimizer) {
        const fault = o.faults?.(counts.optimizer++) ?? null;
        if (fault === 'rate-limit') return json(res, 429, { error: { message: 'rate limited', type: 'rate_limit_error' } }, { 'retry-after-ms': '5' });
        if (fault === 'server-error') return json(res, 500, { error: { message: 'the server broke', type: 'server_error' } });
        if (fault === 'unauthorized')
          return json(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
        answer = optimizerAnswer(text, { ...o, blind: model === BLIND_OPTIMIZER_MODEL });
        if (fault === 'empty') answer = '';
        if (fault === 'unparseable') answer = 'Here is the new version:\n\n```\nAnswer the question about the order, cut off here';
        if (fault === 'timeout') {
          const hold = setTimeout(() => {
            holds.delete(hold);
            if (!res.destroyed) reply(res, body, model, text, answer);
          }, o.timeoutHoldMs);
          holds.add(hold);
          return;
        }
      } else {
        counts.agent++;
        answer = draw(o.seed, 'slip', `${model}\u0000${text}`) < o.slip ? 'unknown' : agentAnswer(text);
      }
      reply(res, body, model, text, answer);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    counts,
    close: () =>
      new Promise((r) => {
        for (const h of holds) clearTimeout(h);
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A chat completion with `answer`, as JSON or as an SSE stream (word by word, usage last when asked). */
function reply(
  res: ServerResponse,
  body: { stream?: boolean; stream_options?: { include_usage?: boolean } },
  model: string,
  prompt: string,
  answer: string,
): void {
  const usage = { prompt_tokens: words(prompt), completion_tokens: words(answer), total_tokens: words(prompt) + words(answer) };
  const base = { id: `chatcmpl-${createHash('sha256').update(prompt).digest('hex').slice(0, 12)}`, created: 1_700_000_000, model };
  if (!body.stream) {
    const choice = { index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop', logprobs: null };
    return json(res, 200, { ...base, object: 'chat.completion', choices: [choice], usage });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
  const object = 'chat.completion.chunk';
  send({ ...base, object, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  for (const piece of answer.split(/(?<=\s)/)) send({ ...base, object, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
  send({ ...base, object, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  if (body.stream_options?.include_usage) send({ ...base, object, choices: [], usage });
  res.end('data: [DONE]\n\n');
}
