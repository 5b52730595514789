/**
 * Which prompt versions a rollout used, in the trajectory viewer (the built bundle in chromium under the panel's CSP,
 * answered by the panel's real host code): rollouts run by the real runner, whose agents read their prompts with
 * `llm.prompt` (a seed, and a candidate being scored), are listed; a rollout's summary names each prompt it read with
 * its source, version and text sha, the span tree shows the reads; a version or a sha lists the rollouts that read
 * it (a chip says so, and removing it lists them all again).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resolve } from 'node:path';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { promptVersions } from '../../protocol/span-reading.js';
import type { Rollout } from '../../protocol/store.js';
import { type RunnerStack, startRunnerStack } from '../helpers/daemon.js';
import { openWebview, type WebviewSession } from './harness.js';

const agent = `${resolve('test/sdk/fixtures/prompt-agents.ts')}#systemAgent`; // tests run from the repo root

describe('trajectory viewer: prompt versions', () => {
  let stack: RunnerStack;
  let view: WebviewSession;
  let seeded: Rollout;
  let scored: Rollout;
  let planned: Rollout;

  before(async () => {
    stack = await startRunnerStack(2);
    const client = stack.daemon.client;
    seeded = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent });
    planned = await stack.runToEnd({ input: { question: 'what is 6*7?' }, agent: agent.replace('#systemAgent', '#plannerAgent') });
    const base = (await client.getLatestResources())!;
    const candidate = await client.addResources({ resources: { ...base.resources, system: { type: 'prompt_template', template: 'Candidate: {question}' } } });
    scored = await stack.runToEnd({
      input: { question: 'what is 6*7?' },
      agent,
      resourcesId: candidate.id,
      metadata: { runId: 'opt-demo', candidate: 'pc-opt-demo-4', taskId: 't1', split: 'val' },
    });
    view = await openWebview('trajectory', trajectoryHandlers(client));
  });
  after(async () => {
    await view?.close();
    await stack?.close();
  });

  it('names each prompt a rollout read, with its source, version and sha, and shows the reads in its span tree', async () => {
    const page = view.page;
    await page.waitForSelector(`.rollout-row[data-rollout-id="${scored.id}"]`);
    await page.click(`.rollout-row[data-rollout-id="${scored.id}"]`);
    const reading = page.locator('.rollout-prompts .prompt-reading[data-prompt="system"]');
    await reading.waitFor();
    const [read] = promptVersions(await stack.daemon.client.querySpans({ rolloutId: scored.id }));
    assert.match(await reading.innerText(), new RegExp(`system\\s+candidate being scored\\s+pc-opt-demo-4\\s+${read!.sha}`));
    assert.equal(await reading.getAttribute('title'), 'Candidate: {question}', 'the text itself, unfilled');
    assert.equal(await page.locator('.span-row[data-kind="prompt"]').count(), 1);
    assert.match(await page.locator('.span-row[data-kind="prompt"]').innerText(), /prompt system · pc-opt-demo-4/);
    await view.screenshot('trajectory-prompt-versions');
    assert.deepEqual(view.problems, []);
  });

  it('lists the rollouts that read a version, and those that read one text by its sha; the chip clears it', async () => {
    const page = view.page;
    const rows = (n: number) => page.waitForFunction((count) => document.querySelectorAll('.rollout-row').length === count, n);
    await page.click('.rollout-prompts .prompt-reading[data-prompt="system"] .prompt-filter >> nth=0');
    await page.waitForSelector('.filter-chip[data-chip="promptVersion"]');
    assert.match(await page.locator('.filter-chip[data-chip="promptVersion"]').innerText(), /Prompt version: pc-opt-demo-4/);
    await rows(1);
    assert.equal(await page.locator('.rollout-row').getAttribute('data-rollout-id'), scored.id);
    await page.click('.filter-chip[data-chip="promptVersion"] .chip-remove');
    await rows(3);

    // The seed's text, by its sha: only the rollout that read it (the candidate's read another text, the planner others).
    await page.click(`.rollout-row[data-rollout-id="${seeded.id}"]`);
    const [seedRead] = promptVersions(await stack.daemon.client.querySpans({ rolloutId: seeded.id }));
    await page.locator('.rollout-prompts .prompt-reading[data-prompt="system"] .prompt-filter >> nth=1').click();
    await page.waitForSelector('.filter-chip[data-chip="promptVersion"]');
    assert.match(await page.locator('.filter-chip[data-chip="promptVersion"]').innerText(), new RegExp(`Prompt version: ${seedRead!.sha}`));
    await rows(1);
    assert.equal(await page.locator('.rollout-row').getAttribute('data-rollout-id'), seeded.id);
    await page.click('.filter-chip[data-chip="promptVersion"] .chip-remove');
    await rows(3);
    assert.ok(await page.locator(`.rollout-row[data-rollout-id="${planned.id}"]`).count());
    assert.deepEqual(view.problems, []);
  });
});
