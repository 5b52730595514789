/**
 * A scripted remote LLM for the sample tests (an outside service, so faking it is allowed): a node:http
 * server speaking the OpenAI chat/completions and completions protocol, streaming (SSE) and not, whose
 * reply to each request is decided by the test's `reply(body)` (e.g. by which agent's prompt it sees).
 * Like vLLM with `return_token_ids` it returns prompt and completion token ids (always, here: one id per
 * UTF-16 code unit), enough for the adapter to build transitions. Every request body is recorded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatBody {
  model?: string;
  messages?: { role: string; content: unknown }[];
  prompt?: string;
  stream?: boolean;
  [k: string]: unknown;
}
export interface ScriptedLlm {
  url: string;
  requests: ChatBody[];
  close(): Promise<void>;
}

const ids = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** Text of a message's content (a string, or OpenAI content parts). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : ((p as { text?: string }).text ?? ''))).join('');
  return '';
}

function respond(body: ChatBody, text: string, path: string, res: ServerResponse): void {
  const chat = path.endsWith('/chat/completions');
  const promptText = chat ? (body.messages ?? []).map((m) => contentText(m.content)).join('\n') : String(body.prompt ?? '');
  const usage = { prompt_tokens: promptText.length, completion_tokens: text.length, total_tokens: promptText.length + text.length };
  const tokenIds = { token_ids: ids(text) };
  const promptIds = { prompt_token_ids: ids(promptText) };
  const base = { id: 'chatcmpl-scripted', created: 1_700_000_000, model: String(body.model ?? 'scripted') };
  if (!body.stream) {
    const choice = chat
      ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', logprobs: null, ...tokenIds }
      : { index: 0, text, finish_reason: 'stop', logprobs: null, ...tokenIds };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: chat ? 'chat.completion' : 'text_completion', choices: [choice], usage, ...promptIds }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
  const object = chat ? 'chat.completion.chunk' : 'text_completion';
  const delta = (t: string) => (chat ? { delta: { content: t } } : { text: t });
  send({
    ...base,
    object,
    choices: [{ index: 0, ...(chat ? { delta: { role: 'assistant', content: '' } } : { text: '' }), finish_reason: null }],
    ...promptIds,
  });
  send({ ...base, object, choices: [{ index: 0, ...delta(text), finish_reason: null, ...tokenIds }] });
  send({ ...base, object, choices: [{ index: 0, ...(chat ? { delta: {} } : { text: '' }), finish_reason: 'stop' }] });
  if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) send({ ...base, object, choices: [], usage });
  res.end('data: [DONE]\n\n');
}

export async function startScriptedLlm(reply: (body: ChatBody) => string): Promise<ScriptedLlm> {
  const requests: ChatBody[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model', created: 0, owned_by: 'test' }] }));
        return;
      }
      let body: ChatBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatBody;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'request body is not JSON', type: 'invalid_request_error' } }));
        return;
      }
      requests.push(body);
      respond(body, reply(body), req.url ?? '', res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
