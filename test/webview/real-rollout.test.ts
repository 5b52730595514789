/**
 * The trajectory viewer on a rollout produced end to end by the real pieces: the runner runs a TS agent
 * (test/runner/fixtures/agents.ts#askAgent: the openai client through the daemon's gateway to an
 * OpenAI-compatible fake upstream, an SDK operation, a message and rewards), the gateway and SDK record
 * the spans, and the viewer (chromium, real CSP) draws them: tree, chat, tokens, final reward, and
 * "jump to code" falling back to the agent function since the gateway records no code location; what answered the
 * call (the upstream model, not the resources version), and a rollout enqueued once the runner left saying
 * "queuing: no runner is connected" in the list and in its view; the list's Model column and its filter.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { startRunnerStack, type Harness, type RunnerStack } from '../helpers/daemon.js';
import { FAKE_ANSWER } from '../helpers/fake-upstream.js';
import { openWebview, type WebviewSession } from './harness.js';

const agentFile = resolve('test/runner/fixtures/agents.ts'); // tests run from the repo root

describe('trajectory viewer on a rollout run by the runner through the gateway', () => {
  let daemon: Harness;
  let stack: RunnerStack;
  let view: WebviewSession;
  let rolloutId: string;

  before(async () => {
    stack = await startRunnerStack(1);
    daemon = stack.daemon;
    const r = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: `${agentFile}#askAgent` });
    rolloutId = r.id;
    await stack.runner.stop(5000); // the viewer reads a finished rollout; nothing else runs
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
  });
  after(async () => {
    await view?.close();
    await stack?.close();
  });

  it('draws the recorded spans: agent, operation, LLM call as chat with tokens, message and rewards', async () => {
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId } });
    await page.waitForSelector('.detail-llm');
    const kinds = await page.locator('.span-row[data-span-id]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.kind));
    assert.equal(kinds[0], 'agent');
    for (const kind of ['operation', 'llm', 'message', 'reward']) assert.ok(kinds.includes(kind), `${kind} span in ${kinds.join(', ')}`);
    assert.match(await page.locator('.detail-llm .chat-msg.role-user').innerText(), /what is 6\*7\?/);
    assert.match(await page.locator('.detail-llm .chat-msg.response').innerText(), new RegExp(FAKE_ANSWER.replace('.', '\\.')));
    const metrics = await page
      .locator('.detail-llm .metric')
      .evaluateAll((els) => Object.fromEntries(els.map((e) => [e.querySelector('.metric-label')!.textContent, e.querySelector('.metric-value')!.textContent])));
    assert.equal(metrics['Prompt tokens'], '4');
    assert.equal(metrics['Completion tokens'], '6');
    assert.equal(metrics['Credit'], '—', 'not trained on: no credit yet');
    assert.equal(await page.locator('.summary .reward').innerText(), '1', "the final reward (the agent's return value)");
    assert.equal(await page.locator('.summary .served-model').innerText(), 'fake-model (upstream)', 'what answered the call, as the gateway recorded it');
    assert.equal(
      await page.locator('.summary .served-note').innerText(),
      'Ran on the upstream model fake-model, not a local policy.',
      'outside training: what it ran on',
    );
    assert.match(await page.locator('.summary .resources').innerText(), /resources #1$/, 'the resources version named as such');
    assert.match((await page.locator('.summary .resources').getAttribute('title'))!, /not a training step/);
    await view.screenshot('trajectory-real-rollout');
  });

  it('jumps to the agent function when the call carries no code location', async () => {
    await view.page.click('.detail-llm .agent-link');
    const open = await view.nextCommand('trajectory/openCode');
    assert.deepEqual(open.params, { filepath: agentFile, lineno: null, symbol: 'askAgent' });
  });

  it('shows the states of the real trajectory and ran without CSP violations', async () => {
    await view.page.click('vscode-tab-header.tab-states');
    await view.page.waitForSelector('.states-table');
    const labels = await view.page.locator('.states-table tbody .var-label').allInnerTexts();
    assert.equal(labels[0], 'task input');
    assert.ok(labels.includes('solver output #1'), labels.join(', '));
    assert.deepEqual([...view.problems], []);
  });

  it('says "queuing: no runner is connected" for a rollout enqueued once the runner left, in the list and its view', async () => {
    const page = view.page;
    const [queued] = await daemon.client.enqueueRollouts([{ input: { question: 'what is 2+3?' }, agent: `${agentFile}#askAgent` }]);
    await view.notify('trajectory/show', { view: { kind: 'rollouts' } });
    const row = page.locator(`.rollout-row[data-rollout-id="${queued!.id}"]`);
    await row.waitFor();
    assert.equal(await row.locator('.run-status').innerText(), 'queuing');
    assert.equal(await row.locator('.no-runner-mark').getAttribute('aria-label'), 'queuing: no runner is connected');
    assert.match(await page.locator('.no-runner-note').innerText(), /^\s*queuing: no runner is connected: /, 'said above the rows, whole');
    assert.equal(await page.locator(`.rollout-row[data-rollout-id="${rolloutId}"] .run-status`).innerText(), 'succeeded');
    assert.equal(await page.locator(`.rollout-row[data-rollout-id="${rolloutId}"] .no-runner-mark`).count(), 0);
    await view.screenshot('trajectory-no-runner-list');
    await row.click();
    await page.waitForSelector('.view-header .run-status');
    assert.equal(await page.locator('.view-header .run-status').innerText(), 'queuing: no runner is connected');
    // Its answer: not run yet, and why; never "the agent returned only its reward", and never upper-cased.
    const answer = page.locator('.rollout-answer .no-answer');
    assert.equal(
      await answer.innerText(),
      'Not run yet: the rollout is queuing and no runner is connected to claim it (agl runner, or a daemon with workers, runs it); its answer appears once it has run.',
    );
    assert.equal(await answer.evaluate((e) => getComputedStyle(e).textTransform), 'none');
  });

  it("names in the list's row the model that answered the calls, says what it is, and lists the rollouts a model answered", async () => {
    const page = view.page;
    await view.notify('trajectory/show', { view: { kind: 'rollouts' } });
    const model = page.locator(`.rollout-row[data-rollout-id="${rolloutId}"] .col-model`);
    await model.waitFor();
    assert.equal(await model.innerText(), 'fake-model · upstream', "the gateway's record of the call, compact");
    const tip = (await model.getAttribute('title'))!;
    assert.match(tip, /^Model: what answered the LLM calls of the rollout's latest attempt, .*not the resources version\.\n• fake-model \(upstream\)$/s);
    assert.match((await page.locator('.grid-header .col-model').getAttribute('title'))!, /^What answered the latest attempt's LLM calls/);
    const rows = () => page.locator('.rollout-row').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.rolloutId).sort());
    const queued = (await daemon.client.queryRollouts({ status: ['queuing'] })).items.map((r) => r.id);
    assert.equal(queued.length, 1, 'the rollout enqueued once the runner left');
    assert.equal(await page.locator(`.rollout-row[data-rollout-id="${queued[0]}"] .col-model`).innerText(), '—', 'no call yet');
    await view.screenshot('trajectory-list-model');
    // The rollout's Model lists the rollouts that model answered: a chip says so, removing it lists them all again.
    await page.click(`.rollout-row[data-rollout-id="${rolloutId}"]`);
    await page.click('.summary .served-filter');
    await page.waitForSelector('.filter-chip[data-chip="servedBy"]');
    assert.equal(await page.locator('.filter-chip[data-chip="servedBy"] .chip-label').innerText(), 'Model: fake-model');
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row').length === 1);
    assert.deepEqual(await rows(), [rolloutId]);
    await page.click('.filter-chip[data-chip="servedBy"] .chip-remove');
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row').length === 2);
    assert.deepEqual(await rows(), [rolloutId, queued[0]].sort());
    assert.deepEqual([...view.problems], []);
  });
});
