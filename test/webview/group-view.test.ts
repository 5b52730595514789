/**
 * The GRPO group view (chromium, strict CSP) on stored transitions whose advantages the trainer's own
 * function computed (daemon/algorithm/grpo.ts computeAdvantages, with the run's recorded config): same
 * answers merged with a count, zero-variance groups folded, sorting by reward or advantage, tool steps and
 * errors on the cards, the advantage formula with each group's own numbers, and a half-width (500 px) split.
 * It also pins down the puzzle: two groups whose rollouts both have reward mean 0.625 and std
 * 0.484 give +0.750 and +0.526, because GRPO's group is the calls, not the rollouts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { assignCredit } from '../../daemon/algorithm/credit.js';
import { computeAdvantages } from '../../daemon/algorithm/grpo.js';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import type { Transition } from '../../protocol/store.js';
import type { AglClient } from '../../client/client.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { AGENT, GROUP_STEP, RUN_ID, recordRollout, seedCalcTraining, type Trajectory } from './seed.js';

const FORMULA_RUN = 'run-formula';
const AIR_RUN = 'run-air';
const Q = { question: 'What is 12*7+3?', expected: '87' };
const right = (extra: Partial<Trajectory> = {}): Trajectory => ({ ...Q, toolExpr: '12*7+3', toolResult: '87', answer: '87', reward: 1, ...extra });
const wrong = (answer: string, extra: Partial<Trajectory> = {}): Trajectory => ({ ...Q, toolExpr: '12*7', toolResult: '84', answer, reward: 0, ...extra });

/** Group A: 5 right and 3 wrong, all with the calculator (16 calls). Group B: the same rewards, the wrong ones
 *  answering at once (13 calls). Identical credit, as samples/calc/train.yaml. */
const FORMULA_GROUPS: Record<string, Trajectory[]> = {
  'task-a': [right(), wrong('84'), right(), right(), wrong('84'), right(), wrong('90'), right()],
  'task-b': [right(), wrong('84', { direct: true }), right(), right(), wrong('80', { direct: true }), right(), wrong('90', { direct: true }), right()],
};
/** Group C, for sorting and errors, under AIR credit (+0.1 when the calculator worked, -0.2 when it failed). */
const AIR_GROUPS: Record<string, Trajectory[]> = {
  'task-c': [right({ direct: true }), right(), wrong('0', { toolError: "calc could not evaluate '12*7+'" }), wrong('86', { direct: true })],
};
const AIR = [
  { when: 'tool_succeeded' as const, reward: 0.1 },
  { when: 'tool_failed' as const, reward: -0.2 },
];

/** Records the groups as one training step and stores the transitions the trainer's own adapter, credit and GRPO code give. */
async function seedRun(client: AglClient, runId: string, groups: Record<string, Trajectory[]>, air: typeof AIR = []): Promise<void> {
  const config = parseTrainConfig({ training: { grpo: { scaleRewards: 'group' }, credit: { air } } });
  await client.createTrainingRun({ id: runId, agent: AGENT, totalSteps: 1, config: config as unknown as Record<string, unknown> });
  const items: Omit<Transition, 'advantage'>[] = [];
  let at = Date.now() - 600_000;
  for (const [groupId, trajectories] of Object.entries(groups)) {
    for (const [k, t] of trajectories.entries()) {
      const rec = await recordRollout(client, t, { runId, step: 0, taskId: groupId, sample: k }, (at += 2000));
      // What the trainer does with an attempt: its spans -> transitions (adapter) -> credit (identical + AIR).
      const trajectory = spansToTrajectory(await client.querySpans({ rolloutId: rec.rolloutId, attemptId: rec.attemptId }));
      for (const c of assignCredit(trajectory, config.training.credit))
        items.push({
          runId,
          step: 0,
          rolloutId: rec.rolloutId,
          attemptId: rec.attemptId,
          spanId: c.step.spanId,
          groupId,
          index: c.step.index,
          agentName: c.step.agentName,
          reward: t.reward,
          credit: c.credit,
          promptTokens: c.step.promptIds.length,
          completionTokens: c.step.completionIds.length,
        });
    }
  }
  const adv = computeAdvantages(items, config.training.grpo);
  await client.addTransitions(items.map((it, k) => ({ ...it, advantage: adv.advantages[k] })));
  await client.updateTrainingRun(runId, { step: 1 });
}

describe('GRPO group view', () => {
  let daemon: Daemon;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    await seedCalcTraining(daemon.client);
    await seedRun(daemon.client, FORMULA_RUN, FORMULA_GROUPS);
    await seedRun(daemon.client, AIR_RUN, AIR_GROUPS, AIR);
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client), { width: 1300 });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  const show = async (runId: string, step: number): Promise<void> => {
    await view.notify('trajectory/show', { view: { kind: 'group', runId, step } });
    await view.page.waitForFunction(
      (id) =>
        document.body.dataset.view === 'group' &&
        !!document.querySelector('.view-header .run-id') &&
        document.querySelector('.view-header .run-id')!.textContent === id,
      runId,
    );
  };
  const cardsOf = (groupId: string) =>
    view.page.locator(`.group[data-group-id="${groupId}"] .sample-card`).evaluateAll((els) =>
      els.map((e) => ({
        count: Number((e as HTMLElement).dataset.count),
        reward: e.querySelector('.metric-value.reward')!.textContent,
        advantage: e.querySelector('.metric-value.advantage')!.textContent,
        answer: e.querySelector('.answer .answer-text')?.textContent ?? null,
        rollouts: [...e.querySelectorAll('a.open-rollout')].map((a) => (a as HTMLElement).dataset.rolloutId),
      })),
    );

  it('shows the whole task with its expected answer, and merges identical answers into one card with a count', async () => {
    await show(RUN_ID, GROUP_STEP);
    const group = view.page.locator('.group[data-group-id="task-12x7"]');
    assert.equal(await group.locator('dd[data-key="question"]').innerText(), 'What is 12*7+3?');
    assert.equal(await group.locator('dd[data-key="answer"]').innerText(), '87');
    assert.match(await group.locator('dt.expected').innerText(), /answer \(expected\)/);
    const cards = await cardsOf('task-12x7');
    assert.deepEqual(
      cards.map((c) => [c.answer, c.count, c.reward]),
      [
        ['87', 2, '1'],
        ['84', 1, '0'],
        ['90', 1, '0'],
      ],
    );
    assert.equal(cards[0].rollouts.length, 2, 'both rollouts that answered 87 are linked from the merged card');
    assert.equal(await group.locator('.sample-card').first().locator('.merged-count').innerText(), '×2');
    // Unmerged: one card per sample.
    await view.page.click('vscode-checkbox.merge-toggle');
    await view.page.waitForFunction(() => document.querySelectorAll('.group[data-group-id="task-12x7"] .sample-card').length === 4);
    // The header counts what the cards show: its samples, and the calls trained on of every call they made.
    const rows = group.locator('.sample-card .call-row');
    const [all, trained] = [await rows.count(), await group.locator('.sample-card .call-row:not(.untrained)').count()];
    assert.equal(await group.locator('.group-head .samples-count').innerText(), 'n = 4');
    assert.equal(await group.locator('.group-head .chip.calls').innerText(), `${trained} trained calls of ${all}`);
    await view.page.click('vscode-checkbox.merge-toggle');
    await view.page.waitForFunction(() => document.querySelectorAll('.group[data-group-id="task-12x7"] .sample-card').length === 3);
  });

  it('folds a zero-variance group (every call the same credit) until the user opens it', async () => {
    const pow = view.page.locator('.group[data-group-id="task-pow"]');
    assert.match((await pow.getAttribute('class'))!, /\bfolded\b/);
    assert.equal(await pow.locator('.sample-card').count(), 0);
    assert.equal(await pow.locator('.chip.warning').innerText(), 'zero variance');
    assert.match(await view.page.locator('.groups-summary').innerText(), /1 with zero variance/);
    assert.equal(await view.page.locator('.group[data-group-id="task-sq"].folded').count(), 0, 'a group with spread is open');
    await pow.locator('.group-toggle').click();
    await view.page.waitForFunction(() => document.querySelectorAll('.group[data-group-id="task-pow"] .sample-card').length === 2);
    assert.deepEqual(
      (await cardsOf('task-pow')).map((c) => [c.answer, c.count]),
      [
        ['1024', 3],
        ['1000', 1],
      ],
    );
    await view.page.locator('.group[data-group-id="task-pow"] .group-toggle').click();
    await view.page.waitForFunction(() => document.querySelectorAll('.group[data-group-id="task-pow"] .sample-card').length === 0);
  });

  it('explains +0.750 and +0.526 from the same reward mean 0.625 / std 0.484: the group is the calls, and the tooltip gives its numbers', async () => {
    await show(FORMULA_RUN, 0);
    const a = await cardsOf('task-a'),
      b = await cardsOf('task-b');
    // The rollouts' rewards are the same in both groups: 5 of 8 right (mean 0.625, population std 0.484).
    for (const cards of [a, b])
      assert.deepEqual(
        cards.map((c) => [c.reward, c.count]).filter(([r]) => r === '1'),
        [['1', 5]],
      );
    assert.equal(a[0].advantage, '+0.750');
    assert.equal(b[0].advantage, '+0.526');
    const numbers = async (groupId: string) => {
      const g = view.page.locator(`.group[data-group-id="${groupId}"]`);
      return {
        mean: await g.locator('.chip.group-mean').innerText(),
        std: await g.locator('.chip.group-std').innerText(),
        formula: (await g.locator('.formula').innerText()).trim(),
        tooltip: (await g.locator('.chip.group-mean').getAttribute('title'))!,
      };
    };
    const na = await numbers('task-a'),
      nb = await numbers('task-b');
    assert.deepEqual([na.mean, na.std, na.formula], ['mean 0.625', 'std 0.500', 'A = (credit − 0.625) / (0.500 + ε)']);
    assert.deepEqual([nb.mean, nb.std, nb.formula], ['mean 0.769', 'std 0.439', 'A = (credit − 0.769) / (0.439 + ε)']);
    assert.match(na.tooltip, /A = \(credit − mean\) \/ \(std \+ ε\) = \(credit − 0\.625\) \/ \(0\.500 \+ 0\.000001\)/);
    assert.match(na.tooltip, /over the 16 calls of the 8 rollouts/);
    assert.match(nb.tooltip, /over the 13 calls of the 8 rollouts/);
    assert.match(nb.tooltip, /credit 1 → stored A \+0\.526/);
    assert.match(nb.tooltip, /The stored advantages follow from these numbers\./);
    // And the numbers shown do give the card's advantage: (1 - 0.769) / 0.439.
    assert.ok(Math.abs((1 - 0.769) / 0.439 - 0.526) < 0.002);
    await view.screenshot('group-formula');
  });

  it('sorts the answers by reward or by advantage, and shows tool steps and errors on the cards', async () => {
    await show(AIR_RUN, 0);
    await view.page.click('vscode-checkbox.merge-toggle'); // the two right answers differ in how they got there: one card each
    await view.page.waitForFunction(() => document.querySelectorAll('.group[data-group-id="task-c"] .sample-card').length === 4);
    const order = async () => (await cardsOf('task-c')).map((c) => c.answer);
    assert.deepEqual(await order(), ['87', '87', '0', '86'], 'by reward: the two right answers (direct, then with the calculator), then the wrong ones');
    await view.page.click('vscode-single-select.sort-select');
    await view.page.locator('vscode-single-select.sort-select').getByRole('option', { name: 'by advantage' }).click();
    await view.page.waitForFunction(
      () =>
        document.querySelector('.group[data-group-id="task-c"] .sample-card .tool-row') !== null &&
        document.querySelector('.group[data-group-id="task-c"] .sample-card')!.querySelector('.tool-row') !== null,
    );
    const cards = await cardsOf('task-c');
    assert.deepEqual(
      cards.map((c) => c.answer),
      ['87', '87', '86', '0'],
      "by advantage: the calculator's AIR bonus first, the failed tool's penalty last",
    );
    const advantages = cards.map(
      (c) =>
        c
          .advantage!.split(' / ')
          .map(Number)
          .reduce((x, y) => x + y, 0) / c.advantage!.split(' / ').length,
    );
    assert.deepEqual(
      advantages,
      [...advantages].sort((x, y) => y - x),
    );
    const first = view.page.locator('.group[data-group-id="task-c"] .sample-card').first();
    assert.equal(await first.locator('.tool-row .tool-text').innerText(), 'calculator(12*7+3) → 87');
    assert.equal(await first.locator('.call-name').first().innerText(), 'calc #1', 'the call name whole');
    const failed = view.page.locator('.group[data-group-id="task-c"] .sample-card').last();
    assert.equal(await failed.locator('.tool-row.failed .tool-text').innerText(), "calculator(12*7) → error: calc could not evaluate '12*7+'");
    assert.match(await failed.locator('.sample-errors').innerText(), /calc could not evaluate '12\*7\+'/);
    assert.equal(await failed.locator('.run-status').innerText(), 'failed');
    await view.page.click('vscode-single-select.sort-select');
    await view.page.locator('vscode-single-select.sort-select').getByRole('option', { name: 'by reward' }).click();
    await view.page.waitForFunction(
      () =>
        document.querySelector('.group[data-group-id="task-c"] .sample-card .answer .answer-text')?.textContent === '87' &&
        document.querySelectorAll('.group[data-group-id="task-c"] .sample-card')[2]?.querySelector('.answer .answer-text')?.textContent === '0',
    );
    await view.page.click('vscode-checkbox.merge-toggle');
    await view.screenshot('group-sort-errors');
  });

  it('fits a half-width split (500 px): the header wraps cleanly, cards flow in the grid, nothing overflows', async () => {
    const narrow = await openWebview('trajectory', trajectoryHandlers(daemon.client), { width: 500, height: 900 });
    try {
      await narrow.notify('trajectory/show', { view: { kind: 'group', runId: AIR_RUN, step: 0 } });
      await narrow.page.waitForSelector('.group[data-group-id="task-c"] .sample-card');
      // A string: the test runner's transpiler would wrap named functions in a helper the page lacks.
      const layout = (await narrow.page.evaluate(`(() => {
        const rect = (e) => e.getBoundingClientRect();
        const header = [...document.querySelectorAll('.view-header > *, .header-controls > *')].filter((e) => !e.classList.contains('spacer') && !e.classList.contains('header-controls')).map(rect);
        const overlaps = header.flatMap((r, i) => header.slice(i + 1).filter((q) => r.left < q.right - 1 && q.left < r.right - 1 && r.top < q.bottom - 1 && q.top < r.bottom - 1).map(() => i));
        const cards = [...document.querySelectorAll('.sample-card')].map(rect);
        const h1 = document.querySelector('.view-header h1');
        return {
          scrollWidth: document.documentElement.scrollWidth, width: window.innerWidth, overlaps,
          headerRight: Math.max(...header.map((r) => r.right)), cardsRight: Math.max(...cards.map((r) => r.right)), cardsLeft: Math.min(...cards.map((r) => r.left)),
          h1Lines: Math.round(rect(h1).height / parseFloat(getComputedStyle(h1).lineHeight || '20')),
          overflowing: [...document.querySelectorAll('.sample-card *')].filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible' && e.clientWidth > 0).map((e) => e.className),
          columns: new Set(cards.map((r) => Math.round(r.left))).size,
        };
      })()`)) as {
        scrollWidth: number;
        width: number;
        overlaps: number[];
        headerRight: number;
        cardsRight: number;
        cardsLeft: number;
        h1Lines: number;
        overflowing: string[];
        columns: number;
      };
      assert.ok(layout.scrollWidth <= layout.width, `no horizontal scroll: ${layout.scrollWidth} > ${layout.width}`);
      assert.deepEqual(layout.overlaps, [], 'no header item overlaps another');
      assert.ok(layout.headerRight <= layout.width && layout.cardsRight <= layout.width && layout.cardsLeft >= 0, JSON.stringify(layout));
      assert.ok(layout.h1Lines <= 1, `the title on one line: ${JSON.stringify(layout)}`);
      assert.deepEqual(layout.overflowing, [], 'nothing inside a card spills out of its box');
      assert.ok(layout.columns >= 1);
      await narrow.screenshot('group-half-width');
      assert.deepEqual([...narrow.problems], []);
    } finally {
      await narrow.close();
    }
  });

  it('ran without a CSP violation or an error', () => {
    assert.deepEqual([...view.problems], []);
  });
});
