/**
 * The order desk and its scripted server (samples/apo), through the real `openai` client: the agent model follows a
 * rule only when its prompt states it, the grader's feedback names what broke without a rule's wording, the optimizer
 * writes only rules its request gives evidence for (and only those its prompt's job covers), the blind one none, and
 * JSON and SSE answers carry usage; faults answer as asked.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { AGENT_MODEL, agentAnswer, BLIND_OPTIMIZER_MODEL, OPTIMIZER_MODEL, type ScriptedLlm, startScriptedLlm } from '../../samples/apo/scripted-llm.js';
import { grade, makeTasks, recordLine, RULES, statedRules, withRules } from '../../samples/apo/world.js';
import { DESK_PROMPT, EXECUTOR_PROMPT, PLANNER_PROMPT } from '../../samples/apo/prompts.js';

let llm: ScriptedLlm;
let client: OpenAI;
const faults = new Map<number, 'rate-limit' | 'empty'>();
before(async () => {
  llm = await startScriptedLlm({ seed: 7, slip: 0, dropPlaceholder: 0, unfenced: 0, faults: (n) => faults.get(n) ?? null });
  client = new OpenAI({ baseURL: llm.url, apiKey: 'none', maxRetries: 0 });
});
after(() => llm.close());

const tasks = makeTasks(5, 70, 't');
const render = (prompt: string, t: (typeof tasks)[number]) => prompt.replace('{record}', recordLine(t.record)).replace('{question}', t.question);
const accuracy = (prompt: string) => tasks.filter((t) => grade(t, agentAnswer(render(prompt, t))).reward === 1).length / tasks.length;

test('the agent model follows exactly the rules its prompt states: the seed scores 1/7, every rule 1', () => {
  assert.ok(Math.abs(accuracy(DESK_PROMPT) - 1 / 7) < 1e-9, `seed ${accuracy(DESK_PROMPT)}`);
  assert.equal(accuracy(withRules(DESK_PROMPT, RULES)), 1);
  for (const r of RULES) {
    const one = accuracy(
      withRules(
        DESK_PROMPT,
        RULES.filter((x) => x !== r),
      ),
    );
    assert.ok(one < 1 && one >= 5 / 7 - 1e-9, `without ${r.id}: ${one}`);
  }
  assert.deepEqual(statedRules(DESK_PROMPT), []);
});

test("the grader's feedback names each broken aspect and the expected answer, never a rule's wording", () => {
  const delivery = tasks.find((t) => t.kind === 'delivery')!;
  const { reward, feedback } = grade(delivery, agentAnswer(render(DESK_PROMPT, delivery)));
  assert.equal(reward, 0);
  assert.match(feedback, /^wrong date: .*; date format: expected \d{4}-\d\d-\d\d, got \w+ \d+, \d{4}$/);
  for (const s of RULES.flatMap((r) => r.sentences)) assert.ok(!feedback.includes(s), `the feedback quotes the rule "${s}"`);
  assert.deepEqual(grade(delivery, delivery.answer), { reward: 1, feedback: 'correct' });
  assert.match(grade(delivery, 'unknown').feedback, /^expected .*, got unknown$/);
});

const ask = async (model: string, content: string) =>
  (await client.chat.completions.create({ model, messages: [{ role: 'user', content }] })).choices[0]!.message.content!;
const reflectRequest = (prompt: string, feedback: string[]) =>
  `Instructions:\n\`\`\`\n${prompt}\n\`\`\`\n\n${feedback.map((f, i) => `### Example ${i + 1}\nFeedback: ${f}`).join('\n\n')}\n\nReply with the new instructions inside one \`\`\` block.`;

test('the optimizer writes the rules its feedback names, for the job its prompt does; the blind one none', async () => {
  const feedback = [
    'wrong date: a delivery date is when the order shipped; date format: expected 2024-01-02, got January 2, 2024',
    'yes/no answer: expected yes, got true',
  ];
  const desk = await ask(OPTIMIZER_MODEL, reflectRequest(DESK_PROMPT, feedback));
  assert.deepEqual(
    statedRules(desk).map((r) => r.id),
    ['delivery', 'date', 'yesno'],
  );
  assert.ok(desk.startsWith('Here is the new version:\n\n```\n') && desk.includes('Record: {record}\nQuestion: {question}'));
  const planner = await ask(OPTIMIZER_MODEL, reflectRequest(PLANNER_PROMPT, feedback));
  assert.deepEqual(
    statedRules(planner).map((r) => r.id),
    ['delivery'],
    'a planner picks fields, it writes no value',
  );
  const executor = await ask(OPTIMIZER_MODEL, reflectRequest(EXECUTOR_PROMPT, feedback));
  assert.deepEqual(
    statedRules(executor).map((r) => r.id),
    ['date', 'yesno'],
    'an executor writes values, it picks no field',
  );
  const blind = await ask(BLIND_OPTIMIZER_MODEL, reflectRequest(DESK_PROMPT, feedback));
  assert.deepEqual(statedRules(blind), []);
  assert.notEqual(blind, `Here is the new version:\n\n\`\`\`\n${DESK_PROMPT}\n\`\`\`\n`, 'the blind optimizer still changes the prompt');
  const critique = await ask(OPTIMIZER_MODEL, `${reflectRequest(DESK_PROMPT, feedback)}\nReply with the critique only.`);
  assert.match(critique, /^The instructions miss these rules of the task:\n- /);
  assert.deepEqual(
    statedRules(critique).map((r) => r.id),
    ['delivery', 'date', 'yesno'],
  );
  const edit = await ask(OPTIMIZER_MODEL, `Instructions:\n\`\`\`\n${DESK_PROMPT}\n\`\`\`\nCritique:\n${critique}\nReply in one \`\`\` block.`);
  assert.deepEqual(
    statedRules(edit).map((r) => r.id),
    ['delivery', 'date', 'yesno'],
    'an edit writes what the critique says',
  );
});

test('JSON and SSE answers carry usage; faults answer as asked', async () => {
  const content = render(DESK_PROMPT, tasks[0]!);
  const res = await client.chat.completions.create({ model: AGENT_MODEL, messages: [{ role: 'user', content }] });
  assert.equal(res.choices[0]!.message.content, agentAnswer(content));
  assert.ok(res.usage!.prompt_tokens > 10 && res.usage!.completion_tokens >= 1);
  const stream = await client.chat.completions.create({
    model: AGENT_MODEL,
    messages: [{ role: 'user', content }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  assert.equal(text, agentAnswer(content));
  assert.deepEqual(usage, res.usage);
  const n = llm.counts.optimizer;
  faults.set(n, 'rate-limit').set(n + 1, 'empty');
  await assert.rejects(ask(OPTIMIZER_MODEL, 'x'), (e: InstanceType<typeof OpenAI.APIError>) => e.status === 429 && e.headers?.get('retry-after-ms') === '5');
  assert.equal(await ask(OPTIMIZER_MODEL, 'x'), '');
});
