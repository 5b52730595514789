/**
 * The calc agent in plain Python: its prompts, tool and reward agree with the TypeScript sample's on the
 * shipped dataset (so both train on the same data), and one rollout runs through a real daemon and the
 * runner's Python path (sdk/python/agl_runner.py), with a scripted upstream LLM: two completion calls,
 * the calculator tool span and the exact-answer reward are recorded.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AGL, SPAN } from '../../protocol/spans.js';
import { type CalcTask, calculate, demonstrations, firstPrompt, parseToolCall, reward, secondPrompt } from '../../samples/calc/task.js';
import { type SampleDaemon, startSampleDaemon } from './sample-daemon.js';

const agent = `${resolve('samples/calc-py/calc_agent.py')}:solve`; // tests run from the repo root
const tasks = readFileSync('samples/calc/data/val.jsonl', 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as CalcTask);

describe('calc-py: same protocol as the TypeScript calc sample', () => {
  it('builds the same prompts, parses the same tool calls, computes and scores the same on the val split', () => {
    const cases = tasks.map((t) => {
      const [call1] = demonstrations(t);
      const expression = parseToolCall(call1.completion)!;
      return { question: t.question, answer: t.answer, completion: call1.completion, expression, bad: `${expression}/0` };
    });
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(resolve('samples/calc-py'))})
import calc_agent as c
out = []
for x in json.load(sys.stdin):
    e = c.parse_tool_call(x["completion"])
    out.append({"first": c.first_prompt(x["question"]), "expression": e, "result": c.calculate(e), "bad": c.calculate(x["bad"]),
                "second": c.second_prompt(x["question"], e, c.calculate(e)), "right": c.reward(x["answer"], str(x["answer"])),
                "wrong": c.reward(x["answer"], str(x["answer"] + 1))})
print(json.dumps(out))`;
    const py = JSON.parse(execFileSync('python3', ['-c', script], { input: JSON.stringify(cases) }).toString()) as Record<string, unknown>[];
    assert.equal(py.length, tasks.length);
    cases.forEach((c, i) => {
      assert.equal(py[i].first, firstPrompt(c));
      assert.equal(py[i].expression, c.expression);
      assert.equal(py[i].result, calculate(c.expression));
      assert.equal(py[i].bad, calculate(c.bad));
      assert.equal(py[i].second, secondPrompt(c, c.expression, calculate(c.expression)));
      assert.equal(py[i].right, reward(c, String(c.answer)));
      assert.equal(py[i].wrong, reward(c, String(c.answer + 1)));
    });
  });
});

describe('calc-py: one rollout through the daemon and the Python runner', () => {
  const task = tasks[0];
  let env: SampleDaemon;

  before(async () => {
    const expert = demonstrations(task);
    env = await startSampleDaemon((body) => expert.find((d) => d.prompt === body.prompt)?.completion ?? 'no idea');
  });
  after(() => env.close());

  it('records both completion calls, the calculator tool span and reward 1', async () => {
    const r = await env.runToEnd(task, agent);
    const [attempt] = await env.daemon.client.getAttempts(r.id);
    assert.equal(r.status, 'succeeded', attempt.error?.message);
    const spans = await env.daemon.client.querySpans({ rolloutId: r.id });
    const calls = spans.filter((s) => s.name === SPAN.llmCall);
    assert.equal(calls.length, 2);
    assert.ok(calls.every((s) => Array.isArray(s.attributes[AGL.completionTokenIds])));
    const tool = spans.find((s) => s.name === SPAN.tool);
    assert.equal(tool?.attributes[AGL.toolSucceeded], true);
    assert.equal(tool?.attributes['calc.expression'], parseToolCall(demonstrations(task)[0].completion));
    const final = spans.find((s) => s.name === SPAN.reward && s.attributes['agl.reward.final'] === true);
    assert.equal(final?.attributes[AGL.rewardValue], 1);
    assert.deepEqual(
      env.llm.requests.map((b) => b.prompt),
      demonstrations(task).map((d) => d.prompt),
    );
  });

  it('a task without an integer answer fails the attempt with a message', async () => {
    const bad = await env.runToEnd({ question: task.question }, agent);
    assert.equal(bad.status, 'failed');
    const [attempt] = await env.daemon.client.getAttempts(bad.id);
    assert.match(attempt.error?.message ?? '', /expected \{"question": string, "answer": integer\}/);
  });
});
