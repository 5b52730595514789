/**
 * `llm.prompt(name, seed, vars=None)`, `emit_reward(value, feedback=...)` and `{"reward": x, "feedback": "..."}` in
 * Python agents run by the runner (sdk/python/agl_runner.py, standard library only): the same texts, versions and prompt
 * spans as the TypeScript SDK (test/sdk/prompts.test.ts) — the seed (a string, or a file beside the agent's module read
 * byte for byte), the promoted text, a candidate's text in a rollout scoring it — the same placeholder rule on the same
 * texts as protocol/prompt-template.ts, and a Python agent killed at its timeout says so as its feedback.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { renderPrompt } from '../../protocol/prompt-template.js';
import { candidateId } from '../../protocol/prompts.js';
import { lockedReward } from '../../protocol/judge-reading.js';
import { episodeAnswer, finalReward, promptVersions, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Rollout, Span } from '../../protocol/store.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const file = resolve('test/runner/fixtures/py_prompt_agent.py'); // tests run from the repo root
const agent = (fn: string) => `${file}:${fn}`;
const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);
const asked = (spans: Span[]) =>
  spans.filter((s) => s.name === SPAN.llmCall).map((s) => (JSON.parse(String(s.attributes[GENAI.inputMessages])) as { content: string }[]).at(-1)!.content);

describe('llm.prompt and feedback in Python agents', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  before(async () => {
    stack = await startRunnerStack(2);
    ({ daemon } = stack);
  });
  after(() => stack.close());

  const run = (fn: string, extra: Partial<Parameters<RunnerStack['runToEnd']>[0]> = {}): Promise<Rollout> =>
    stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent(fn), ...extra });
  const spansOf = (r: Rollout) => daemon.client.querySpans({ rolloutId: r.id });

  it('gives the seed with its vars, records the prompt span, and returns { reward, feedback, answer } as the final reward', async () => {
    const r = await run('answer');
    assert.equal(r.status, 'succeeded');
    const spans = await spansOf(r);
    assert.deepEqual(asked(spans), ['Answer briefly: what is 6*7?']);
    assert.deepEqual(
      promptVersions(spans).map((p) => [p.name, p.source, p.version, p.sha, p.template]),
      [['system', 'seed', 'seed', sha('Answer briefly: {question}'), 'Answer briefly: {question}']],
    );
    const final = spans.find((s) => s.name === SPAN.reward)!;
    assert.deepEqual(
      [final.attributes[AGL.rewardValue], final.attributes[AGL.rewardFinal], final.attributes[AGL.rewardFeedback]],
      [1, true, 'the answer holds 42'],
    );
    assert.deepEqual(episodeAnswer(spans).value, { answer: 'The answer is 42.' });
  });

  it('locks a reward against an LLM judge as the TypeScript SDK does: emit_reward(v, final=True), or {"reward": x, "final": True}', async () => {
    const returned = await spansOf(await run('locking'));
    const emitted = await spansOf(await run('locking', { input: { question: 'q', emit: true } }));
    assert.deepEqual([lockedReward(returned)?.value, lockedReward(emitted)?.value], [1, 0.25]);
    assert.deepEqual([finalReward(returned), finalReward(emitted)], [1, 0.25]);
    assert.equal(rolloutFeedback(returned), 'checked');
  });

  it("reads a file seed beside the agent's module exactly as stored (CRLF kept), and emit_reward's feedback", async () => {
    const r = await run('clerk');
    const spans = await spansOf(r);
    const seedFile = resolve(dirname(file), 'prompts/answer.md');
    const text = readFileSync(seedFile, 'utf8');
    assert.ok(text.includes('\r\n'));
    assert.deepEqual(asked(spans), [text.replace('{question}', 'what is 6*7?')]);
    assert.deepEqual(
      promptVersions(spans).map((p) => [p.name, p.sha, p.file]),
      [['clerk', sha(text), seedFile]],
    );
    assert.equal(rolloutFeedback(spans), 'formatted, not checked');
  });

  it('gives the promoted text, and in a rollout scoring a candidate its text, with their versions', async () => {
    const run0 = await daemon.client.createTrainingRun({ agent: agent('answer'), kind: 'optimize', config: {}, totalSteps: 0 });
    const best = await daemon.client.addPromptCandidate({
      ...{ id: candidateId(run0.id, 0), runId: run0.id, ordinal: 0, prompts: { system: 'Promoted {question}' } },
      ...{ parents: [], origin: 'seed', component: null, reflection: null, minibatch: null },
    });
    await daemon.client.promotePrompt({ agent: agent('answer'), name: 'system', text: 'Promoted {question}', candidateId: best.id, by: 'test' });
    await new Promise((r) => setTimeout(r, 1100)); // the runner read this agent's promoted prompts in the test before: past its cache
    const promoted = await run('answer');
    const base = (await daemon.client.getLatestResources())!;
    const resources = await daemon.client.addResources({
      resources: { ...base.resources, system: { type: 'prompt_template', template: 'Candidate {{question}}', engine: 'f-string' } },
    });
    const scored = await run('answer', { resourcesId: resources.id, metadata: { runId: run0.id, candidate: 'pc-py-1', taskId: 't', split: 'val' } });
    assert.deepEqual(asked(await spansOf(promoted)), ['Promoted what is 6*7?']);
    assert.deepEqual(asked(await spansOf(scored)), ['Candidate what is 6*7?']);
    assert.deepEqual(
      [...promptVersions(await spansOf(promoted)), ...promptVersions(await spansOf(scored))].map((p) => [p.source, p.version]),
      [
        ['promoted', best.id],
        ['candidate', 'pc-py-1'],
      ],
    );
  });

  it('fails a rollout whose prompt asks for a var the agent does not give, naming it', async () => {
    const r = await run('missing_var');
    assert.equal(r.status, 'failed');
    assert.match(
      (await daemon.client.getAttempts(r.id))[0].error?.message ?? '',
      /ValueError: llm\.prompt\('system'\): placeholder \{context\} has no value.*vars given: question/,
    );
  });

  it('a Python agent killed at its timeout scores 0 with the timeout as its feedback (the runner records its root span)', async () => {
    const r = await run('slow_graded', { config: { timeoutSeconds: 1 } });
    assert.equal(r.status, 'failed');
    const spans = await spansOf(r);
    assert.equal(spans.filter((s) => s.name === SPAN.agentRun).length, 1);
    assert.match(rolloutFeedback(spans) ?? '', /^rollout timed out after 1 s/);
  });

  it('renders the same texts as the TypeScript rule (protocol/prompt-template.ts), errors included', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['Q: {question} / {{ record }} / {{n}}', { question: 'why?', record: { id: 7, tags: ['a', 'é'] }, n: 3 }],
      ['Answer as {"total": <number>} or {} or { name } or {1st} or {x y}.', {}],
      ['\\{name} is filled as {name}; \\{{name}} too; {{{name}}}', { name: 'Ann' }],
      ['{flag} {none}', { flag: true, none: null }],
      ['Record: {record}\nQ: {question}', { record: 'r' }],
    ];
    const script = [
      'import json, sys',
      'import agl_runner',
      'out = []',
      'for text, values in json.load(sys.stdin):',
      '    try:',
      '        out.append(agl_runner.render_prompt(text, values))',
      '    except ValueError as e:',
      "        out.append('error: ' + str(e).split(':')[1].strip())",
      'print(json.dumps(out))',
    ].join('\n');
    const py = spawnSync('python3', ['-c', script], {
      input: JSON.stringify(cases),
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: resolve('sdk/python') },
    });
    assert.equal(py.status, 0, py.stderr);
    const ts = cases.map(([text, values]) => {
      try {
        return renderPrompt(text, values);
      } catch (e) {
        return `error: ${(e as Error).message.split(':')[1]!.trim()}`;
      }
    });
    assert.deepEqual(JSON.parse(py.stdout), ts);
    assert.equal(ts.at(-1), 'error: placeholder {question} has no value');
  });
});
