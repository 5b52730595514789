/**
 * The bodies of the gateway's OpenAI-compatible calls (POST /v1/chat/completions, /v1/completions, also under
 * /rollout/:rolloutId/attempt/:attemptId; declared in routes.ts gatewayRoutes). Their rule differs from the store
 * API's strict bodies: an OpenAI body carries parameters the gateway never reads (new OpenAI parameters,
 * vLLM's extras) and those must keep reaching the upstream server unchanged, so an unknown key passes. What is
 * declared, and refused with 400 naming the field when wrong, is that the body is a JSON object and that each
 * field the gateway itself reads (gateway-local.ts, gateway-upstream.ts, gateway-spans.ts, gateway-route.ts)
 * has the type it reads it as. Requiredness stays with the backend that serves the call (the local policy
 * needs non-empty messages; an upstream answers for itself), so a call is never refused for what it may omit.
 * `null` is accepted wherever OpenAI's SDKs may send it for "not set".
 */
import { z } from 'zod';

const count = z.number().int().min(0).nullish();
const real = z.number().nullish();

/** The sampling and answer fields both call kinds read. */
const commonFields = {
  model: z.string().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  n: z.number().int().min(1).nullish(),
  max_tokens: count,
  max_completion_tokens: count,
  temperature: real,
  top_p: real,
  top_k: z.number().int().nullish(),
  seed: z.number().int().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  return_token_ids: z.boolean().nullish(),
};

/** POST /v1/chat/completions: the messages are objects (their roles are checked by the backend that reads them). */
export const ChatCompletionBody = z.looseObject({
  ...commonFields,
  messages: z.array(z.looseObject({})).nullish(),
  tools: z.array(z.looseObject({})).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({})]).nullish(),
  logprobs: z.boolean().nullish(),
});
export type ChatCompletionBody = z.output<typeof ChatCompletionBody>;

/** POST /v1/completions: the prompt is text, texts, token ids or lists of token ids; logprobs is a count. */
export const CompletionBody = z.looseObject({
  ...commonFields,
  prompt: z.union([z.string(), z.array(z.string()), z.array(z.number().int()), z.array(z.array(z.number().int()))]).nullish(),
  logprobs: z.union([z.number().int().min(0), z.boolean()]).nullish(),
});
export type CompletionBody = z.output<typeof CompletionBody>;
