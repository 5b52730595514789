/**
 * `llm.prompt(name, seed, vars)` in TypeScript agents run by the runner against a real daemon (the real `openai` client
 * through the gateway): the seed (a string, or a file beside the agent), else the text promoted for the agent, else (in
 * a rollout pinning a candidate's resources) the candidate's prompt_template; placeholders filled from vars (a missing
 * one fails the rollout, naming it); every read recorded as a prompt span, which the rollout view lists and the
 * rollouts query filters by. Outside a rollout the seed, and no span.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { formatSpanTree } from '../../daemon/runner/print.js';
import { candidateId } from '../../protocol/prompts.js';
import { promptVersions, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Rollout, Span } from '../../protocol/store.js';
import { LLM } from '../../sdk/index.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const file = resolve('test/sdk/fixtures/prompt-agents.ts'); // tests run from the repo root
const agent = (name: string) => `${file}#${name}`;
const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** What the LLM was asked, call by call (the gateway's record). */
const asked = (spans: Span[]) =>
  spans
    .filter((s) => s.name === SPAN.llmCall)
    .sort((a, b) => a.sequenceId - b.sequenceId)
    .map((s) => (JSON.parse(String(s.attributes[GENAI.inputMessages])) as { content: string }[]).at(-1)!.content);

describe('llm.prompt in TypeScript agents', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  before(async () => {
    stack = await startRunnerStack(2);
    ({ daemon } = stack);
  });
  after(() => stack.close());

  const spansOf = (r: Rollout) => daemon.client.querySpans({ rolloutId: r.id });

  it('gives the seed with its vars filled in, and records which text it was', async () => {
    const r = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('systemAgent') });
    assert.equal(r.status, 'succeeded');
    const spans = await spansOf(r);
    assert.deepEqual(asked(spans), ['Answer briefly: what is 6*7?']);
    const read = spans.find((s) => s.name === SPAN.prompt)!;
    assert.deepEqual(
      [AGL.promptName, AGL.promptSource, AGL.promptVersion, AGL.promptSha, AGL.promptTemplate].map((k) => read.attributes[k]),
      ['system', 'seed', 'seed', sha('Answer briefly: {question}'), 'Answer briefly: {question}'],
    );
    assert.equal(read.parentSpanId, spans.find((s) => s.name === SPAN.agentRun)!.spanId);
    assert.equal(read.attributes[AGL.promptFile], undefined, 'a string seed names no file');
    assert.match(
      formatSpanTree(spans),
      new RegExp(`agentlightning\\.prompt .*system: seed seed sha ${sha('Answer briefly: {question}')}`),
      "agl rollout's print",
    );
  });

  it("reads a file seed beside the agent's file, and records each prompt version it read once with its reads", async () => {
    const r = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('plannerAgent') });
    assert.equal(r.status, 'succeeded');
    const spans = await spansOf(r);
    const seedFile = resolve(dirname(file), 'prompts/planner.md');
    const planner = readFileSync(seedFile, 'utf8');
    assert.deepEqual(asked(spans), [planner.replace('{question}', 'what is 6*7?'), 'Carry out: The answer is 42.'], 'JSON braces in the file stay text');
    const detail = await daemon.client.getRolloutView({ rolloutId: r.id });
    assert.deepEqual(
      detail.prompts.map((p) => [p.name, p.source, p.version, p.sha, p.reads, p.file]),
      [
        ['planner', 'seed', 'seed', sha(planner), 1, seedFile],
        ['executor', 'seed', 'seed', sha('Carry out: {{ plan }}'), 2, null],
      ],
    );
  });

  it("gives the text promoted for the agent, versioned by the candidate it came from, and only to that agent's rollouts", async () => {
    const run = await daemon.client.createTrainingRun({ agent: agent('promotedAgent'), kind: 'optimize', config: {}, totalSteps: 0 });
    const best = await daemon.client.addPromptCandidate({
      ...{ id: candidateId(run.id, 0), runId: run.id, ordinal: 0, prompts: { system: 'Promoted: answer {question} with a number.' } },
      ...{ parents: [], origin: 'seed', component: null, reflection: null, minibatch: null },
    });
    await daemon.client.promotePrompt({ agent: agent('promotedAgent'), name: 'system', text: best.prompts.system!, candidateId: best.id, by: 'test' });
    const promoted = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('promotedAgent') });
    const other = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('systemAgent') });
    assert.deepEqual(asked(await spansOf(promoted)), ['Promoted: answer what is 6*7? with a number.']);
    assert.deepEqual(
      promptVersions(await spansOf(promoted)).map((p) => [p.source, p.version]),
      [['promoted', best.id]],
    );
    assert.deepEqual(asked(await spansOf(other)), ['Answer briefly: what is 6*7?'], 'another agent keeps its seed');
  });

  it("gives a rollout scoring a candidate the candidate's text, and never another rollout, even one run with its resources", async () => {
    const base = (await daemon.client.getLatestResources())!;
    const candidate = await daemon.client.addResources({
      resources: { ...base.resources, system: { type: 'prompt_template', template: 'Candidate: {question} (think step by step)', engine: 'f-string' } },
    });
    const scored = await stack.runToEnd({
      input: { question: 'what is 6*7?' },
      agent: agent('systemAgent'),
      resourcesId: candidate.id,
      metadata: { runId: 'opt-x', candidate: 'pc-opt-x-1', taskId: 't1', split: 'val' },
    });
    const unpinned = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('systemAgent') });
    const pinned = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent('systemAgent'), resourcesId: candidate.id });
    assert.deepEqual(asked(await spansOf(scored)), ['Candidate: what is 6*7? (think step by step)']);
    assert.deepEqual(
      promptVersions(await spansOf(scored)).map((p) => [p.source, p.version, p.sha]),
      [['candidate', 'pc-opt-x-1', sha('Candidate: {question} (think step by step)')]],
    );
    assert.deepEqual(asked(await spansOf(unpinned)), ['Answer briefly: what is 6*7?'], "the latest resources are the candidate's: no rollout gets it unasked");
    assert.deepEqual(asked(await spansOf(pinned)), ['Answer briefly: what is 6*7?'], 'nor one naming no candidate');
    const byVersion = await daemon.client.queryRollouts({ promptVersion: 'pc-opt-x-1' });
    assert.deepEqual(
      byVersion.items.map((x) => x.id),
      [scored.id],
    );
    const bySha = await daemon.client.queryRollouts({ promptVersion: sha('Answer briefly: {question}'), agent: agent('systemAgent') });
    assert.ok(bySha.items.some((x) => x.id === unpinned.id) && !bySha.items.some((x) => x.id === scored.id));
  });

  it('fails a rollout whose prompt asks for a var the agent does not give, naming it (the rollout feedback says so)', async () => {
    const r = await stack.runToEnd({ input: { question: 'q' }, agent: agent('missingVarAgent') });
    assert.equal(r.status, 'failed');
    const [attempt] = await daemon.client.getAttempts(r.id);
    assert.match(attempt.error?.message ?? '', /llm\.prompt\('system'\): placeholder \{context\} has no value.*vars given: question/);
    assert.match(rolloutFeedback(await spansOf(r)) ?? '', /placeholder \{context\} has no value/);
  });

  it('works outside a rollout: the seed (a prompt given in the LLM init first), and no span', () => {
    const llm = new LLM({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', agentDir: dirname(file) });
    assert.equal(llm.prompt('system', 'Hi {name}', { name: 'Ann' }), 'Hi Ann');
    assert.equal(llm.prompt('planner', { file: 'prompts/planner.md' }), readFileSync(resolve(dirname(file), 'prompts/planner.md'), 'utf8'));
    const given = new LLM({ ...llm.toJSON(), prompts: { system: { text: 'Given {name}', source: 'promoted', version: 'promoted' } } });
    assert.equal(given.prompt('system', 'Hi {name}', { name: 'Bo' }), 'Given Bo');
    assert.deepEqual(new LLM(given.toJSON()).prompts, given.prompts, 'the init survives JSON (the runner sends it to the worker)');
  });

  it('names what is wrong with a prompt name, a seed, vars or a seed file', () => {
    const llm = new LLM({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', agentDir: dirname(file) });
    assert.throws(() => llm.prompt('has space', 'x'), /name "has space" is not a prompt name: use 1-64 letters/);
    assert.throws(() => llm.prompt('system', { path: 'x.md' } as never), /the seed must be the prompt's text or \{ file: /);
    assert.throws(() => llm.prompt('system', 'x', ['a'] as never), /vars must be an object of placeholder values/);
    assert.throws(() => llm.prompt('system', { file: 'prompts/missing.md' }), /cannot read its seed file .*prompts\/missing\.md \(ENOENT\)/);
  });
});
