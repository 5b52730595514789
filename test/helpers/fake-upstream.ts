/**
 * A fake remote LLM for tests and benchmarks (an outside service, so faking it is allowed): a plain
 * node:http server speaking the OpenAI chat/completions protocol, streaming (SSE) and not. It answers
 * immediately with a fixed completion, or with a tool call when tools are offered and the last message
 * is not a tool result; it returns vLLM-style token ids and logprobs when asked (`return_token_ids`,
 * `logprobs`). It records every request body it received.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOpenAiServer } from './net.js';

export interface FakeUpstream {
  url: string;
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

export const FAKE_ANSWER = 'The answer is 42.';
export const FAKE_TOKEN_IDS = [791, 4320, 374, 220, 2983, 13];
export const FAKE_PROMPT_IDS = [1, 2, 3, 4];

function answerFor(body: Record<string, unknown>) {
  const messages = (body.messages as { role: string }[] | undefined) ?? [];
  const tools = body.tools as { function: { name: string } }[] | undefined;
  if (tools?.length && messages.at(-1)?.role !== 'tool') {
    return {
      content: null,
      toolCalls: [{ id: 'call_fake_1', type: 'function', function: { name: tools[0].function.name, arguments: '{"expression":"6*7"}' } }],
      finish: 'tool_calls',
    };
  }
  return { content: FAKE_ANSWER, toolCalls: undefined, finish: 'stop' };
}

function handle(body: Record<string, unknown>, path: string, res: ServerResponse): void {
  const chat = path.endsWith('/chat/completions');
  const a = answerFor(body);
  const usage = {
    prompt_tokens: FAKE_PROMPT_IDS.length,
    completion_tokens: FAKE_TOKEN_IDS.length,
    total_tokens: FAKE_PROMPT_IDS.length + FAKE_TOKEN_IDS.length,
  };
  const ids = body.return_token_ids ? { token_ids: FAKE_TOKEN_IDS } : {};
  const logprobs = body.logprobs ? { content: FAKE_TOKEN_IDS.map((t) => ({ token: String(t), logprob: -0.5, bytes: null, top_logprobs: [] })) } : null;
  const base = { id: 'chatcmpl-fake', created: 1_700_000_000, model: String(body.model ?? 'fake-model') };
  if (!body.stream) {
    const choice = chat
      ? {
          index: 0,
          message: { role: 'assistant', content: a.content, ...(a.toolCalls ? { tool_calls: a.toolCalls } : {}) },
          finish_reason: a.finish,
          logprobs,
          ...ids,
        }
      : { index: 0, text: FAKE_ANSWER, finish_reason: 'stop', logprobs: null, ...ids };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        ...base,
        object: chat ? 'chat.completion' : 'text_completion',
        choices: [choice],
        usage,
        ...(body.return_token_ids ? { prompt_token_ids: FAKE_PROMPT_IDS } : {}),
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
  const object = chat ? 'chat.completion.chunk' : 'text_completion';
  if (chat) {
    send({
      ...base,
      object,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      ...(body.return_token_ids ? { prompt_token_ids: FAKE_PROMPT_IDS } : {}),
    });
    if (a.toolCalls)
      send({ ...base, object, choices: [{ index: 0, delta: { tool_calls: a.toolCalls.map((t, index) => ({ index, ...t })) }, finish_reason: null, ...ids }] });
    else {
      const words = FAKE_ANSWER.split(/(?<= )/);
      words.forEach((w, i) =>
        send({
          ...base,
          object,
          choices: [
            {
              index: 0,
              delta: { content: w },
              finish_reason: null,
              ...(body.return_token_ids
                ? { token_ids: FAKE_TOKEN_IDS.slice(i, i + 1).concat(i === words.length - 1 ? FAKE_TOKEN_IDS.slice(words.length) : []) }
                : {}),
            },
          ],
        }),
      );
    }
    send({ ...base, object, choices: [{ index: 0, delta: {}, finish_reason: a.finish }] });
  } else {
    send({ ...base, object, choices: [{ index: 0, text: FAKE_ANSWER, finish_reason: null }] });
    send({ ...base, object, choices: [{ index: 0, text: '', finish_reason: 'stop' }] });
  }
  if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) send({ ...base, object, choices: [], usage });
  res.end('data: [DONE]\n\n');
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: Record<string, unknown>[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] }));
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'bad json', type: 'invalid_request_error' } }));
        return;
      }
      requests.push(body);
      if (body.model === 'missing-model') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'The model `missing-model` does not exist', type: 'invalid_request_error', code: 'model_not_found' } }));
        return;
      }
      handle(body, req.url ?? '', res);
    });
  });
  const listening = await listenOpenAiServer(server);
  return { url: listening.url, requests, close: listening.close };
}
