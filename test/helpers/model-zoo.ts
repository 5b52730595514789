/**
 * The model zoo: one scripted OpenAI-compatible server (real HTTP, chat completions as JSON or SSE with usage, reached
 * through the real `openai` client) that plays the ways real models behave, chosen by the request's model name, so the
 * judge, prompt optimization and `agl eval` are tested against untidy models and not only ideal ones. An outside
 * service, so scripting it is allowed. A name is a role and behaviours joined by `+` (`judge+think+noise0.2`):
 *   roles: `judge` (reads the request as scripted-judge.ts does and scores with the zoo's scoring policy, the answer
 *     key by default), `optimizer` (the order desk's optimizer, samples/apo/scripted-llm.ts), `agent` (the order desk's
 *     agent model);
 *   judge behaviours (ZOO_BEHAVIOURS lists them with what they do): noise<f>, position, length, self, bare, think,
 *     draft, scale5, scale10, percent; optimizer behaviours: commentary, blocks, rename, grow, onefix; any role: refuse[n],
 *     cut[n], ratelimit[n], slow (refuse, cut and ratelimit hit the first n calls of that model name, every call
 *     without n).
 * A name that does not parse is answered 404 model_not_found naming the bad part (the real client's ModelRefused),
 * unless `anyModelAs` plays every name as a plain role (startScriptedJudge's judge, whatever the test calls it).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { rng } from '../../samples/shared/rng.js';
import { agentAnswer } from '../../samples/apo/scripted-llm.js';
import { answerKeyJudge, type Fault, type JudgeRequest, readJudgeRequest, type ScoreLine, type ScriptedJudgeOptions } from './scripted-judge.js';
import { judgeAnswer, ZOO_SIGNATURE } from './zoo-judge.js';
import { listenOpenAiServer } from './net.js';
import { optimizerZooAnswer } from './zoo-optimizer.js';

export type ZooRole = 'judge' | 'optimizer' | 'agent';
export { ZOO_SIGNATURE };

/** Every behaviour a zoo model name can ask for, with what the model then does (the README's list follows this one). */
export const ZOO_BEHAVIOURS = {
  noise: 'noise<f>: at temperature > 0 each score is flipped (1 - score) with probability f, a fresh draw per score of every call; exact at temperature 0',
  position: 'position: the trajectory shown first scores 1, whatever it says',
  length: 'length: the trajectory with the longest final answer scores 1 whatever it says, the others at most 0.5',
  self: `self: a trajectory that carries the zoo's own signature ("${ZOO_SIGNATURE}") scores 1 (self-preference), the others at most 0.5`,
  bare: "bare: the score JSON alone, no fence and no words around it (the zoo's `style` otherwise: a ```json fence after a sentence)",
  think: 'think: a <think>...</think> block before the answer, its reasoning holding a draft score JSON of its own',
  draft: 'draft: a draft score JSON, then "wait, I misread" and the corrected JSON (the last one is meant)',
  scale5: 'scale5: scores on a 1-5 scale, stated in the JSON ("scale": "1-5") and in a sentence',
  scale10: 'scale10: scores on a 1-10 scale, stated in the JSON ("scale": "1-10") and in a sentence',
  percent: 'percent: scores as percentages, stated in the JSON ("scale": "percent") and in a sentence',
  commentary: 'commentary: the new prompt in one fenced block with prose before and after it',
  blocks: 'blocks: the prompt it was given quoted in a first fenced block, the new one in the last',
  rename: 'rename: renames the {question} placeholder to {query}',
  grow: 'grow: adds a paragraph to the prompt every time it rewrites it, so prompts grow round after round',
  onefix: 'onefix: writes in one missing rule per rewrite (the first its evidence shows), never all at once',
  refuse: 'refuse[n]: answers "I can\'t help with that." (the first n calls of that model name; every call without n)',
  cut: 'cut[n]: the answer cut at max_tokens (half of it without max_tokens), finish_reason "length"',
  ratelimit: 'ratelimit[n]: 429 with a Retry-After header in seconds (retryAfterSeconds)',
  slow: 'slow: the answer sent in pieces spaced slowMs apart (SSE chunks, or the JSON body)',
} as const;

export type ZooBehaviour = keyof typeof ZOO_BEHAVIOURS;

/** A parsed model name: its role, and each behaviour with its number (null when the name gives none). */
export interface ZooModel {
  role: ZooRole;
  behaviours: Map<ZooBehaviour, number | null>;
}

const ROLES: readonly ZooRole[] = ['judge', 'optimizer', 'agent'];

/** The role and behaviours a model name asks for, or why it names no zoo model. */
export function parseZooModel(name: string): ZooModel | { error: string } {
  const [role, ...parts] = name.split('+');
  if (!ROLES.includes(role as ZooRole)) return { error: `the model '${name}' names no zoo role (${ROLES.join(', ')}) before its first +` };
  const behaviours = new Map<ZooBehaviour, number | null>();
  for (const part of parts) {
    const m = /^([a-z]+?)(\d+(?:\.\d+)?)?$/.exec(part);
    const known = m && Object.hasOwn(ZOO_BEHAVIOURS, part) ? part : m && Object.hasOwn(ZOO_BEHAVIOURS, m[1]!) ? m[1]! : null;
    if (!known) return { error: `the model '${name}' asks for '${part}', which is no zoo behaviour (${Object.keys(ZOO_BEHAVIOURS).join(', ')})` };
    behaviours.set(known as ZooBehaviour, known === part || !m![2] ? null : Number(m![2]));
  }
  return { role: role as ZooRole, behaviours };
}

export interface ModelZooOptions {
  /** How the zoo's judges score what they read (default: the answer key in the rubric, answerKeyJudge). */
  score?: (request: JudgeRequest) => ScoreLine[];
  /** scripted-judge.ts's faults: the fault of judge request `n` (0, 1, ... in arrival order), if any. */
  faults?: (n: number, request: JudgeRequest) => Fault | null;
  /** How a judge wraps its JSON (scripted-judge.ts's styles; default fenced). */
  style?: ScriptedJudgeOptions['style'];
  /** How long a `timeout` fault holds its answer (default 5 s). */
  timeoutHoldMs?: number;
  /** Seeds the noise and the optimizer's wording (default 0). */
  seed?: number;
  /** The Retry-After of `ratelimit`, in seconds (default 1). */
  retryAfterSeconds?: number;
  /** The spacing of a `slow` answer's pieces (default 30 ms). */
  slowMs?: number;
  /** Play every model name that names no zoo model as this role with no behaviours (default: answer 404). */
  anyModelAs?: ZooRole;
}

/** One request the zoo served: the model asked for, its sampling settings, and (judge role) what the judge read. */
export interface ZooRequest {
  model: string;
  temperature: number | null;
  maxTokens: number | null;
  stream: boolean;
  judge: JudgeRequest | null;
}

export interface ModelZoo {
  /** The base URL (ends in /v1). */
  url: string;
  /** Every chat request served, in arrival order (429s and refusals included). */
  requests: ZooRequest[];
  /** What each judge request said, in arrival order. */
  judgeRequests: JudgeRequest[];
  close(): Promise<void>;
}

type Body = {
  model?: unknown;
  messages?: { role: string; content: unknown }[];
  temperature?: unknown;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: boolean };
};

/** What the zoo sends back: an error with its headers, or an answer (held `holdMs` first when a fault says so). */
type Outcome = { status: number; message: string; headers?: Record<string, string> } | { content: string; finishReason: 'stop' | 'length'; holdMs?: number };

export async function startModelZoo(o: ModelZooOptions = {}): Promise<ModelZoo> {
  const requests: ZooRequest[] = [];
  const judgeRequests: JudgeRequest[] = [];
  const callsByName = new Map<string, number>();
  const noise = rng(o.seed ?? 0);
  const score = o.score ?? answerKeyJudge();
  const holds = new Set<ReturnType<typeof setTimeout>>();

  const play = (body: Body, name: string, model: ZooModel, request: ZooRequest): Outcome => {
    const call = callsByName.get(name) ?? 0;
    callsByName.set(name, call + 1);
    const hits = (b: ZooBehaviour) => model.behaviours.has(b) && (model.behaviours.get(b) === null || call < model.behaviours.get(b)!);
    if (hits('ratelimit')) return { status: 429, message: 'zoo: rate limited', headers: { 'retry-after': String(o.retryAfterSeconds ?? 1) } };
    const messages = body.messages ?? [];
    let content: string;
    if (model.role === 'judge') {
      const read = readJudgeRequest(messages, name);
      request.judge = read;
      const n = judgeRequests.push(read) - 1;
      const fault = o.faults?.(n, read) ?? null;
      if (fault === 'server-error') return { status: 500, message: 'scripted judge: internal error' };
      if (fault === 'rate-limit') return { status: 429, message: 'scripted judge: rate limited', headers: { 'retry-after-ms': '50' } };
      if (fault === 'unauthorized') return { status: 401, message: 'scripted judge: invalid api key' };
      const noisy = (request.temperature ?? 0) > 0 ? noise : null;
      content = judgeAnswer(read, score(read), { behaviours: model.behaviours, noise: noisy, fault, style: model.behaviours.has('bare') ? 'bare' : o.style });
      if (fault === 'timeout') return { content, finishReason: 'stop', holdMs: o.timeoutHoldMs ?? 5_000 };
    } else {
      const text = messages.map((m) => textOf(m.content)).join('\n');
      content = model.role === 'agent' ? agentAnswer(text) : optimizerZooAnswer(text, model.behaviours, o.seed ?? 0);
    }
    if (hits('refuse')) content = "I can't help with that.";
    if (hits('cut')) {
      const cutAt = request.maxTokens !== null ? request.maxTokens * 4 : Math.floor(content.length / 2);
      return { content: content.slice(0, Math.min(cutAt, content.length - 1)), finishReason: 'length' };
    }
    return { content, finishReason: 'stop' };
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url?.endsWith('/models'))
        return json(res, 200, { object: 'list', data: ROLES.map((id) => ({ id, object: 'model', created: 0, owned_by: 'zoo' })) });
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      const body = await readBody(req);
      const name = String(body.model ?? '');
      const parsed = parseZooModel(name);
      const model: ZooModel | null = 'error' in parsed ? (o.anyModelAs ? { role: o.anyModelAs, behaviours: new Map() } : null) : parsed;
      if (!model) return json(res, 404, { error: { message: (parsed as { error: string }).error, type: 'invalid_request_error', code: 'model_not_found' } });
      const request: ZooRequest = {
        model: name,
        temperature: typeof body.temperature === 'number' ? body.temperature : null,
        maxTokens: numberOr(body.max_tokens ?? body.max_completion_tokens),
        stream: body.stream === true,
        judge: null,
      };
      requests.push(request);
      const outcome = play(body, name, model, request);
      if ('status' in outcome) return json(res, outcome.status, { error: { message: outcome.message, type: 'zoo', code: outcome.status } }, outcome.headers);
      const send = () => {
        if (!res.destroyed) void respond(res, body, outcome, model.behaviours.has('slow') ? (o.slowMs ?? 30) : 0);
      };
      if (!outcome.holdMs) return send();
      const t = setTimeout(() => {
        holds.delete(t);
        send();
      }, outcome.holdMs);
      holds.add(t);
    })().catch((e: Error) => json(res, 400, { error: { message: e.message } }));
  });
  const listening = await listenOpenAiServer(server);
  return {
    url: listening.url,
    requests,
    judgeRequests,
    close: async () => {
      for (const t of holds) clearTimeout(t);
      await listening.close();
    },
  };
}

const textOf = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';
const numberOr = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
}

/** The answer as a chat completion (JSON, or SSE when asked to stream, usage last when asked), each piece `slowMs` apart. */
async function respond(res: ServerResponse, body: Body, a: { content: string; finishReason: string }, slowMs: number): Promise<void> {
  const promptChars = JSON.stringify(body.messages ?? []).length;
  const usage = { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.ceil(a.content.length / 4) };
  const total = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
  const base = { id: 'chatcmpl-zoo', created: 1_700_000_000, model: String(body.model ?? 'zoo') };
  const pieces: string[] = [];
  if (!body.stream) {
    const choice = { index: 0, message: { role: 'assistant', content: a.content }, finish_reason: a.finishReason };
    const text = JSON.stringify({ ...base, object: 'chat.completion', choices: [choice], usage: total });
    res.writeHead(200, { 'content-type': 'application/json' });
    pieces.push(...(slowMs ? (text.match(/[\s\S]{1,200}/g) ?? []) : [text]));
  } else {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const object = 'chat.completion.chunk';
    const event = (o: unknown) => pieces.push(`data: ${JSON.stringify(o)}\n\n`);
    event({ ...base, object, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (const piece of a.content.match(/[\s\S]{1,40}/g) ?? [])
      event({ ...base, object, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    event({ ...base, object, choices: [{ index: 0, delta: {}, finish_reason: a.finishReason }] });
    if (body.stream_options?.include_usage) event({ ...base, object, choices: [], usage: total });
    pieces.push('data: [DONE]\n\n');
  }
  for (const [i, piece] of pieces.entries()) {
    if (i > 0 && slowMs) await pause(slowMs);
    if (res.destroyed) return;
    res.write(piece);
  }
  res.end();
}
