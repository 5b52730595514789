/**
 * The order desk agents (world.ts): ordinary OpenAI-client agents whose prompts are read with `llm.prompt`, so
 * `agl optimize` can score candidate texts and `agl optimize promote` can replace them. Each grades its answer and
 * returns { reward, feedback }: the feedback is what a search learns from.
 *   deskAgent     one prompt (`desk`): reads the record and the question, answers.
 *   plannerAgent  two prompts: `planner` names the field that answers the question (its answer streamed, SSE),
 *                 `executor` writes that field's value as the answer. Each reads its own prompt.
 *   agl optimize samples/apo/agent.ts#deskAgent --prompt desk --train samples/apo/data/train.jsonl \
 *     --val samples/apo/data/val.jsonl --test samples/apo/data/test.jsonl --budget 300 ...   (README.md)
 */
import OpenAI from 'openai';
import { type LLM, rollout } from '../../sdk/index.js';
import { DESK_PROMPT, EXECUTOR_PROMPT, PLANNER_PROMPT } from './prompts.js';
import { type DeskTask, FIELDS, grade, recordLine } from './world.js';

const client = (llm: LLM) => new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey, maxRetries: 0 });

export const deskAgent = rollout(
  async (task: DeskTask, llm: LLM) => {
    const content = llm.prompt('desk', DESK_PROMPT, { record: recordLine(task.record), question: task.question });
    const res = await client(llm).chat.completions.create({ model: llm.model, messages: [{ role: 'user', content }], ...llm.openaiParams });
    return grade(task, res.choices[0]?.message?.content ?? '');
  },
  { name: 'desk' },
);

export const plannerAgent = rollout(
  async (task: DeskTask, llm: LLM) => {
    const openai = client(llm);
    const plan = llm.prompt('planner', PLANNER_PROMPT, { question: task.question });
    const stream = await openai.chat.completions.create({ model: llm.model, messages: [{ role: 'user', content: plan }], stream: true, ...llm.openaiParams });
    let field = '';
    for await (const chunk of stream) field += chunk.choices[0]?.delta?.content ?? '';
    field = field.trim();
    const value = (FIELDS as readonly string[]).includes(field) ? task.record[field as keyof DeskTask['record']] : '(no such field)';
    const write = llm.prompt('executor', EXECUTOR_PROMPT, { field, value });
    const res = await openai.chat.completions.create({ model: llm.model, messages: [{ role: 'user', content: write }], ...llm.openaiParams });
    return grade(task, res.choices[0]?.message?.content ?? '');
  },
  { name: 'planner-executor' },
);
