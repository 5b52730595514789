/**
 * End-to-end in real VS Code (code-server + chromium + playwright-core) on a store with real training in it:
 * the setup runs two short `agl train`s of the calc sample from its shipped warm-up (samples/calc/warmup and
 * train.yaml, with a small budget: 6 steps of 6 tasks x 4, validation on 16 tasks) into a scratch data dir,
 * then opens VS Code on that store and checks, against what the store holds:
 *  - the CodeLens above calcAgent: the newest run's held-out reward and the rollout count, with its tooltip,
 *    the same with `samples/` open and with the repository root open, and the same as the dashboard says;
 *  - the dashboard: curves with titled axes and the latest values of the run, then the other run overlaid;
 *  - a training step's GRPO groups (opened from a point on the curve): cards with reward and advantage, the
 *    advantage formula with the group's own mean and std;
 *  - the rollouts list (opened from the lens): exact count, a search that narrows it, a reward filter as a
 *    removable chip with "N hidden by filters", removing the filters restores the count;
 *  - a rollout's span tree: the calculator step as `calc(<input>) → <output>`, and its input and output; the model
 *    that answered its calls (the policy and its updates the gateway recorded), never the resources version;
 *  - the screenshot review, checked: every value axis of the dashboard (full width, and at half width beside the group
 *    view) fits its labels (none cut at the canvas's edge); the group header counts its cards' samples and the calls
 *    trained on of all the calls they made; the list's count is its rows, its resources column named as such.
 * Screenshots go to test-results/e2e/trained-*.png.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../daemon/store/index.js';
import { servedModelText, servedModels, servedRowText } from '../../protocol/served-by.js';
import { finalReward, spanKind } from '../../protocol/span-reading.js';
import { assertAxesFit, axisFits } from '../helpers/axis-fit.js';
import type { Rollout, Span, TrainingRun, Transition } from '../../protocol/store.js';
import { beginE2e, cutOff, openFile, ROOT, runCommand, settledBoxes, webview, webviewWith, type FrameLocator, inWorkbench } from './harness.js';

const AGENT = 'samples/calc/agent.ts#calcAgent';
const STEPS = 6;
/** Most rollouts the searched question may find (all in view at once in the list). */
const MAX_FOUND = 10;

/** Two short real training runs of the calc agent from its warm-up; the second with another learning rate. */
function trainTwice(dataDir: string, scratch: string): void {
  const val = join(scratch, 'val.jsonl');
  writeFileSync(
    val,
    readFileSync(join(ROOT, 'samples', 'calc', 'data', 'val.jsonl'), 'utf8')
      .split('\n')
      .slice(0, 16)
      .join('\n') + '\n',
  );
  for (const lr of [[], ['--lr', '0.001']]) {
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'bin', 'agl.mjs'),
        'train',
        AGENT,
        '--train',
        'samples/calc/data/train.jsonl',
        '--val',
        val,
        '--model',
        'samples/calc/warmup',
        '--config',
        'samples/calc/train.yaml',
        '--batch-size',
        '6',
        '--group-size',
        '4',
        '--max-steps',
        String(STEPS),
        '--val-every',
        '2',
        '--workers',
        '4',
        ...lr,
        '--data-dir',
        dataDir,
        '--quiet',
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: 240_000 },
    );
    assert.equal(r.status, 0, `agl train failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  }
}

interface Expected {
  runs: TrainingRun[]; // newest first
  ended: number;
  val: { runId: string; first: { step: number; value: number }; last: { step: number; value: number } };
  /** Each run's training reward (reward/mean) per step. */
  rewards: Map<string, number[]>;
  /** The rollouts a search for its question finds, and those of them with reward 1 (their ids, as the store orders them). */
  tool: {
    rollout: Rollout;
    span: Span;
    input: string;
    output: string;
    question: string;
    searchIds: string[];
    rewardIds: string[];
    /** Its resources version, and what answered its calls in words (protocol/served-by.ts, from its spans). */
    resourcesVersion: number;
    served: string;
    /** The same as the list's row says it, compact (servedRowText). */
    servedRow: string;
  };
  /** `calls`: every LLM call the group's samples made (its transitions are the calls trained on). */
  group: { step: number; groupId: string; credits: number[]; advantages: number[]; calls: number };
}

/** What the views must show, read from the store `agl train` wrote. */
async function readExpected(dataDir: string): Promise<Expected> {
  const store = await openStore({ dataDir });
  try {
    const runs = await store.listTrainingRuns(AGENT);
    assert.equal(runs.length, 2, 'two training runs');
    assert.ok(
      runs.every((r) => r.status === 'succeeded' && r.step === STEPS),
      JSON.stringify(runs.map((r) => [r.status, r.step])),
    );
    const newest = runs[0]!;
    const metrics = await store.queryMetrics(newest.id);
    const vals = metrics.filter((m) => m.name === 'val/reward').sort((a, b) => a.step - b.step);
    assert.ok(vals.length >= 2, 'the newest run validated before and after training');
    const rewards = new Map<string, number[]>();
    for (const run of runs)
      rewards.set(
        run.id,
        (await store.queryMetrics(run.id))
          .filter((m) => m.name === 'reward/mean')
          .sort((a, b) => a.step - b.step)
          .map((m) => m.value),
      );
    assert.ok(
      [...rewards.values()].every((r) => r.length === STEPS),
      'a training reward per step',
    );
    const ended = (await store.queryRollouts({ agent: AGENT, status: ['succeeded', 'failed'], limit: 1, withTotal: true })).total!;

    // A train rollout of the newest run that used the calculator and got the answer right, whose question a search
    // finds in a few rollouts (at most MAX_FOUND: all of them in view in the list at once).
    let tool: Expected['tool'] | null = null;
    const train = (await store.queryRollouts({ agent: AGENT, mode: 'train', runId: newest.id, limit: 500, order: 'asc' })).items;
    for (const rollout of train) {
      const spans = await store.querySpans({ rolloutId: rollout.id });
      const span = spans.find((s) => spanKind(s) === 'tool' && s.status.code === 'ok' && s.attributes['gen_ai.tool.call.result'] !== undefined);
      if (!span || finalReward(spans) !== 1) continue;
      const question = (rollout.input as { question: string }).question;
      const found = async (q: Record<string, unknown>) =>
        (await store.queryRollouts({ agent: AGENT, search: question, limit: MAX_FOUND + 1, ...q })).items.map((r) => r.id);
      const searchIds = await found({});
      if (searchIds.length > MAX_FOUND) continue;
      tool = {
        rollout,
        span,
        question,
        input: String(span.attributes['gen_ai.tool.call.arguments']),
        output: String(span.attributes['gen_ai.tool.call.result']),
        searchIds,
        rewardIds: await found({ rewardMin: 1 }),
        resourcesVersion: (await store.getResources(rollout.resourcesId!))!.version,
        served: servedModels(spans).map(servedModelText).join(', '),
        servedRow: servedRowText(servedModels(spans)),
      };
      break;
    }
    assert.ok(tool, `no train rollout of ${newest.id} used the calculator and got the answer right`);

    // The first step with a group whose calls' credits differ (GRPO learns from it).
    let group: Expected['group'] | null = null;
    for (let step = 0; step < STEPS && !group; step++) {
      const ts: Transition[] = await store.queryTransitions({ runId: newest.id, step, limit: 10_000 });
      const byGroup = new Map<string, Transition[]>();
      for (const t of ts) byGroup.set(t.groupId, [...(byGroup.get(t.groupId) ?? []), t]);
      for (const [groupId, g] of byGroup) {
        const credits = g.map((t) => t.credit);
        if (credits.some((c) => c !== credits[0])) {
          const attempts = new Map(g.map((t) => [t.rolloutId, t.attemptId]));
          let calls = 0;
          for (const [rolloutId, attemptId] of attempts)
            calls += (await store.querySpans({ rolloutId, attemptId })).filter((s) => spanKind(s) === 'llm').length;
          group = { step, groupId, credits, advantages: g.map((t) => t.advantage), calls };
          break;
        }
      }
    }
    assert.ok(group, `no step of ${newest.id} has a group with spread`);
    return {
      runs,
      ended,
      rewards,
      tool,
      group,
      val: { runId: newest.id, first: { step: vals[0]!.step, value: vals[0]!.value }, last: { step: vals.at(-1)!.step, value: vals.at(-1)!.value } },
    };
  } finally {
    await store.close();
  }
}

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
const stdUnbiased = (xs: number[]) => Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1));
const fmt3 = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(3));
const signed3 = (x: number) => `${x > 0 ? '+' : ''}${x.toFixed(3)}`;

test(
  'VS Code on a store with two real training runs: CodeLens stats, dashboard and overlay, GRPO groups, rollouts search and filters, a tool step',
  { timeout: 10 * 60_000 },
  async () => {
    const clock = beginE2e();
    const scratch = mkdtempSync(join(tmpdir(), 'agl-e2e-trained-'));
    const dataDir = join(scratch, 'agl-data');
    try {
      trainTwice(dataDir, scratch);
      clock.mark('trained twice');
      const want = await readExpected(dataDir);
      const [newest, older] = want.runs as [TrainingRun, TrainingRun];
      const moved = want.val.first.step < want.val.last.step;
      const headline = `held-out reward ${want.val.last.value.toFixed(2)}${moved ? ` (from ${want.val.first.value.toFixed(2)} at step ${want.val.first.step})` : ''}`;
      // The lens ends with the reward the agent trains on (protocol/reward-source.ts): the newest run had no judge.
      const lensTitle = `${headline} · ${want.ended.toLocaleString('en-US')} rollouts · reward: its own`;
      const headlineTooltip =
        `Held-out reward ${want.val.last.value.toFixed(2)}: mean final reward on the validation tasks, answered greedily (temperature 0), at step ${want.val.last.step} of training run ${newest.id}` +
        `${moved ? ` (${want.val.first.value.toFixed(2)} on the same tasks at step ${want.val.first.step}${want.val.first.step === 0 ? ', before training' : ''})` : ''}` +
        `, the agent's newest run with a validation; ${want.ended.toLocaleString('en-US')} rollouts ended.`;

      await inWorkbench({ shots: 'trained', dataDir, clock }, async ({ server, page, shot, mark }) => {
        /** Opens `folder`, waits for the daemon, opens the calc agent and checks its lens (title and tooltip). */
        const checkLens = async (folder: string, file: string, name: string) => {
          await page.goto(`${server.url}/?folder=${encodeURIComponent(folder)}`);
          await page.locator('.explorer-folders-view .monaco-list-row').first().waitFor({ state: 'visible', timeout: 60_000 });
          await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 90_000 });
          await openFile(page, file);
          const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'held-out reward' }).first();
          await lens.waitFor({ state: 'visible', timeout: 60_000 });
          assert.equal(await lens.innerText(), lensTitle);
          assert.equal(
            await lens.getAttribute('title'),
            `${headlineTooltip} Trains on its own reward (the one its code emits or returns): training run ${newest.id} had no judge. Click to list this agent's rollouts.`,
          );
          // The lens belongs to calcAgent: it stands right above its declaration. Measured once both have stopped moving:
          // while TypeScript still analyses a freshly opened file, Monaco re-renders its lines (a line can be briefly
          // detached or hidden, and lenses shift it down as they arrive).
          const decl = page.locator('.monaco-editor .view-line', { hasText: 'export const calcAgent = rollout(' });
          const [lensBox, declBox] = await settledBoxes(page, [lens, decl]);
          const lensTop = lensBox.y,
            declTop = declBox.y;
          assert.ok(declTop > lensTop && declTop - lensTop < 40, `the lens (y ${lensTop}) sits above calcAgent (y ${declTop})`);
          await shot(name); // (the tooltip is the link's title attribute: the browser draws it outside the page, not in a screenshot)
        };

        // 1. The CodeLens with samples/ open.
        await checkLens(join(ROOT, 'samples'), 'calc/agent.ts', '01-codelens-samples');
        mark('codelens (samples/)');

        // 2. The dashboard on the newest run: the same headline, curves with titled axes, the run's latest values.
        await runCommand(page, 'Agent Lightning: Open Training Dashboard');
        const dash: FrameLocator = webview(page);
        await dash.locator('.chart-card[data-chart="reward"] canvas').first().waitFor({ state: 'visible', timeout: 60_000 });
        await dash.locator('.kpi.headline', { hasText: 'held-out' }).waitFor({ state: 'visible', timeout: 30_000 });
        assert.equal(await dash.locator('.kpi.headline').innerText(), headline, 'the dashboard says what the lens says');
        assert.equal(await dash.locator('.kpi.headline').getAttribute('title'), headlineTooltip);
        assert.match(await dash.locator('.progress-line').innerText(), new RegExp(`succeeded[\\s\\S]*step ${STEPS} / ${STEPS}`));
        const reward = dash.locator('.chart-card[data-chart="reward"]');
        const box = (await reward.locator('canvas').first().boundingBox())!;
        assert.ok(box.width > 300 && box.height > 100, `reward chart drawn: ${JSON.stringify(box)}`);
        assert.equal(await reward.locator('.y-title').innerText(), 'mean reward');
        assert.equal(await reward.locator('.x-title').innerText(), 'training step');
        const latest = async (metric: string, run?: string) =>
          Number(await reward.locator(`.chart-value[data-metric="${metric}"]${run ? `[data-run="${run}"]` : ''} b`).innerText());
        assert.ok(Math.abs((await latest('val/reward')) - want.val.last.value) < 5e-4, 'the latest held-out point is the lens number');
        const rewardsOf = (run: TrainingRun) => want.rewards.get(run.id)!;
        assert.ok(Math.abs((await latest('reward/mean')) - rewardsOf(newest).at(-1)!) < 5e-4);
        // The curve holds every step: with the cursor over step k the legend reads that step's reward.
        const over = reward.locator('.u-over');
        const lastStep = Math.max(STEPS, want.val.last.step); // the x axis: the validation before training at 0, training steps 1..6
        /** Puts the cursor over `step` of the reward chart; returns where it is. */
        const hover = async (step: number) => {
          const ob = (await over.boundingBox())!;
          const at = { x: ob.x + 2 + (ob.width - 4) * (step / lastStep), y: ob.y + ob.height / 2 };
          await page.mouse.move(at.x, at.y);
          await over.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))); // uPlot moves its cursor on a frame
          return at;
        };
        for (const step of [1, Math.floor(STEPS / 2)]) {
          await hover(step);
          const shown = await latest('reward/mean');
          const stored = rewardsOf(newest)[step - 1]!; // step k is the k-th update (protocol/metrics.ts FIRST_TRAINING_STEP)
          assert.ok(Math.abs(shown - stored) < 5e-4, `step ${step}: the legend reads ${shown}, the store ${stored}`);
          assert.equal(await reward.locator('.chart-step').innerText(), `step ${step}`);
        }
        await page.mouse.move(0, 0);
        assertAxesFit(await axisFits(dash.locator('body')), 'the dashboard at full width');
        await shot('02-dashboard');
        mark('dashboard');

        // ... then the older run overlaid: one legend entry and one colour per run, both runs' values on the reward chart.
        await dash.locator('.compare summary').click();
        await dash.locator(`vscode-checkbox[data-run="${older.id}"]`).click();
        await dash.locator('.run-legend-item').nth(1).waitFor({ state: 'visible', timeout: 15_000 });
        const legend = await dash
          .locator('.run-legend-item')
          .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.run, getComputedStyle(e.querySelector('.swatch')!).color]));
        assert.deepEqual(
          legend.map(([run]) => run),
          [newest.id, older.id],
        );
        assert.notEqual(legend[0]![1], legend[1]![1], 'each run has its own colour');
        await reward.locator(`.chart-value[data-metric="reward/mean"][data-run="${older.id}"]`).waitFor({ state: 'visible', timeout: 15_000 });
        assert.ok(Math.abs((await latest('reward/mean', older.id)) - rewardsOf(older).at(-1)!) < 5e-4, 'the overlaid run shows its own last reward');
        assert.ok(Math.abs((await latest('reward/mean', newest.id)) - rewardsOf(newest).at(-1)!) < 5e-4);
        await dash.locator('.compare summary').click(); // fold the run picker again: the charts are what the shot is for
        await shot('03-dashboard-overlay');
        mark('overlay');

        // 3. A point on the reward curve opens that step's GRPO groups beside the dashboard.
        const at = await hover(want.group.step);
        await page.mouse.click(at.x, at.y);
        const groups = await webviewWith(page, '.group');
        const header = groups.locator('.view-header');
        await header.locator('h1', { hasText: `step ${want.group.step}` }).waitFor({ state: 'visible', timeout: 30_000 });
        assert.equal(await header.locator('.run-id').innerText(), newest.id);
        const group = groups.locator(`.group[data-group-id="${want.group.groupId}"]`);
        await group.locator('.sample-card').first().waitFor({ state: 'visible', timeout: 30_000 });
        const m = mean(want.group.credits),
          s = stdUnbiased(want.group.credits);
        assert.equal(await group.locator('.chip.group-mean').innerText(), `mean ${fmt3(m)}`);
        assert.equal(await group.locator('.chip.group-std').innerText(), `std ${fmt3(s)}`);
        assert.equal((await group.locator('.formula').innerText()).trim(), `A = (credit − ${fmt3(m)}) / (${fmt3(s)} + ε)`);
        assert.match(
          (await group.locator('.chip.group-mean').getAttribute('title'))!,
          new RegExp(
            `A = \\(credit − mean\\) / \\(std \\+ ε\\) = \\(credit − ${fmt3(m).replace('.', '\\.')}\\) / \\(${fmt3(s).replace('.', '\\.')} \\+ 0\\.000001\\)`,
          ),
        );
        const cards = await group.locator('.sample-card').evaluateAll((els) =>
          els.map((e) => ({
            reward: e.querySelector('.metric-value.reward')?.textContent ?? '',
            advantage: e.querySelector('.metric-value.advantage')?.textContent ?? '',
            count: Number((e as HTMLElement).dataset.count),
          })),
        );
        assert.equal(
          cards.reduce((a, c) => a + c.count, 0),
          4,
          "the group's 4 samples are on its cards",
        );
        // The header counts what the cards show: the samples, and the calls trained on of every call they made.
        assert.equal(await group.locator('.group-head .samples-count').innerText(), 'n = 4');
        const trained = want.group.credits.length;
        assert.equal(await group.locator('.group-head .chip.calls').innerText(), `${trained} trained call${trained === 1 ? '' : 's'} of ${want.group.calls}`);
        const stored = want.group.advantages.map(signed3);
        for (const c of cards) {
          assert.match(c.reward, /^(0|1)$/, `a card's reward: ${JSON.stringify(c)}`);
          for (const a of c.advantage.split(' / '))
            assert.ok(stored.includes(a), `advantage ${a} shown on a card is one the trainer stored (${stored.join(', ')})`);
        }
        // Both panels at half width: nothing in their headers is cut off at the right.
        const dashBeside = await webviewWith(page, '.chart-card');
        assert.deepEqual(await cutOff(dashBeside, '.view-header'), [], 'the dashboard header fits beside the group view');
        assert.deepEqual(await cutOff(dashBeside, '.run-progress'), []);
        assert.deepEqual(await cutOff(groups, '.view-header'), []);
        assertAxesFit(await axisFits(dashBeside.locator('body')), 'the dashboard at half width, beside the group view');
        await group.scrollIntoViewIfNeeded();
        await shot('04-group-view');
        mark('group view');

        // 4. The rollouts list from the lens: filtered on the agent, exact count, search, a reward filter as a chip.
        await runCommand(page, 'View: Close All Editors');
        await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
        await openFile(page, 'calc/agent.ts');
        await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'held-out reward' }).first().click();
        const viewer = webview(page);
        const count = viewer.locator('.view-header .count');
        const waitCount = (n: number) =>
          viewer
            .locator('.view-header .count', { hasText: new RegExp(`^${n.toLocaleString('en-US')} rollouts?$`) })
            .waitFor({ state: 'visible', timeout: 30_000 });
        await waitCount(want.ended);
        assert.match(await viewer.locator('.filter-chip[data-chip="agent"]').innerText(), new RegExp(`Agent: ${AGENT}`));
        assert.equal(await viewer.locator('.hidden-count').count(), 0, "every rollout of the store is the agent's");
        await viewer.locator('vscode-textfield[data-filter="search"] input').fill(want.tool.question);
        const rowIds = () => viewer.locator('.rollout-row').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.rolloutId));
        const searchCount = want.tool.searchIds.length,
          rewardCount = want.tool.rewardIds.length;
        await waitCount(searchCount);
        assert.ok(searchCount < want.ended, `the search narrows the list (${searchCount} of ${want.ended})`);
        assert.equal(await viewer.locator('.filter-chip[data-chip="search"]').innerText(), `Search: "${want.tool.question}"`);
        assert.equal(await viewer.locator('.hidden-count').innerText(), `${(want.ended - searchCount).toLocaleString('en-US')} hidden by filters`);
        assert.deepEqual(await rowIds(), want.tool.searchIds, 'the rows are the rollouts the store finds, newest first');
        assert.equal(await count.innerText(), `${searchCount} rollout${searchCount === 1 ? '' : 's'}`, 'the header counts the rows');
        const res = viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"] .col-res`);
        if (await res.isVisible()) assert.equal(await res.innerText(), `#${want.tool.resourcesVersion}`, 'a resources version, never like a step');
        const metaTitle = (await viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"] .col-meta`).getAttribute('title'))!;
        assert.match(metaTitle, new RegExp(`Resources #${want.tool.resourcesVersion}: .*not a training step`));
        // What answered its calls, in the row: its Model column (or, narrow, the second line), the model in words in the tooltip.
        const model = viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"] .col-model`);
        if (await model.isVisible()) assert.equal(await model.innerText(), want.tool.servedRow);
        else
          assert.ok(
            (await viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"] .col-meta`).innerText()).includes(` · ${want.tool.servedRow} · `),
          );
        assert.ok(metaTitle.includes(`• ${want.tool.served}`), `the row's tooltip names ${want.tool.served}: ${metaTitle}`);
        assert.equal(await viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"] .col-input`).getAttribute('title'), want.tool.question);
        // Beside the editor the list is narrow: its filters fold behind the "Filters" button beside the search box.
        const filtersToggle = viewer.locator('.filters-toggle');
        if ((await filtersToggle.isVisible()) && (await filtersToggle.getAttribute('aria-expanded')) === 'false') await filtersToggle.click();
        await viewer.locator('vscode-textfield[data-filter="rewardMin"] input').fill('1');
        await viewer.locator('vscode-textfield[data-filter="rewardMin"] input').press('Enter');
        await viewer.locator('.filter-chip[data-chip="reward"]').waitFor({ state: 'visible', timeout: 30_000 });
        await waitCount(rewardCount);
        assert.equal(await viewer.locator('.filter-chip[data-chip="reward"]').innerText(), 'Reward ≥ 1');
        assert.equal(await viewer.locator('.hidden-count').innerText(), `${(want.ended - rewardCount).toLocaleString('en-US')} hidden by filters`);
        assert.deepEqual(await rowIds(), want.tool.rewardIds);
        assert.ok(want.tool.rewardIds.includes(want.tool.rollout.id));
        const rewards = await viewer.locator('.rollout-row .col-reward').allInnerTexts();
        assert.ok(
          rewards.every((r) => r === '1'),
          `rewards shown: ${rewards.join(', ')}`,
        );
        assert.deepEqual(await cutOff(viewer, '.rollouts-view'), [], 'the list fits its half of the window');
        const ids = await viewer
          .locator('.rollout-row .col-id')
          .evaluateAll((els) => els.map((e) => ({ text: e.textContent, cut: e.scrollWidth > e.clientWidth })));
        assert.deepEqual(
          ids.filter((c) => c.cut),
          [],
          `rollout ids shown whole: ${JSON.stringify(ids)}`,
        );
        await shot('05-rollouts-search-filter');
        mark('rollouts list');

        // 5. The rollout that used the calculator: its tool step reads calc(input) → output, in the tree and in the detail.
        await viewer.locator(`.rollout-row[data-rollout-id="${want.tool.rollout.id}"]`).click();
        const toolRow = viewer.locator(`.span-row[data-span-id="${want.tool.span.spanId}"]`);
        await toolRow.waitFor({ state: 'visible', timeout: 30_000 });
        const line = `calc(${want.tool.input}) → ${want.tool.output}`;
        assert.equal(await toolRow.locator('.label').innerText(), line);
        await toolRow.click();
        await viewer.locator('.tool-io').waitFor({ state: 'visible', timeout: 10_000 });
        assert.equal((await viewer.locator('.tool-io .tool-line').innerText()).trim(), line);
        assert.equal(await viewer.locator('.tool-io .tool-input').innerText(), want.tool.input);
        assert.equal(await viewer.locator('.tool-io .tool-output').innerText(), want.tool.output);
        assert.deepEqual(await cutOff(viewer, '.view-header'), [], 'the rollout header fits its half of the window');
        // What answered its calls: the run's policy with the updates it had (the gateway's record), not the resources version.
        assert.match(want.tool.served, /^\S+ (after \d+ updates?|\(untrained\))$/, `recorded: ${want.tool.served}`);
        assert.equal(await viewer.locator('.summary .served-model').innerText(), want.tool.served);
        assert.equal(await viewer.locator('.summary .resources > span').nth(1).innerText(), `resources #${want.tool.resourcesVersion}`);
        await shot('06-tool-step');
        mark('tool step');

        // Back to the list: the filters are still there; removing them with their chips restores the count.
        await viewer.locator('.back').click();
        await waitCount(rewardCount);
        await viewer.locator('.filter-chip[data-chip="reward"] .chip-remove').click();
        await waitCount(searchCount);
        await viewer.locator('.filter-chip[data-chip="search"] .chip-remove').click();
        await waitCount(want.ended);
        assert.equal(await viewer.locator('.hidden-count').count(), 0);
        assert.equal(await viewer.locator('.filter-chip[data-chip="reward"]').count(), 0);
        assert.equal(await count.innerText(), `${want.ended.toLocaleString('en-US')} rollouts`);
        mark('filters removed');

        // 6. The same lens with the repository root open (the agent's id does not depend on the folder).
        await checkLens(resolve(ROOT), 'samples/calc/agent.ts', '07-codelens-repo-root'); // resolve: no trailing slash on the folder
        mark('codelens (repo root)');
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
    }
  },
);
