/**
 * End-to-end in real VS Code (code-server + chromium, dark theme, 1400x900) on a real multi-agent run: the setup trains
 * the sql sample (writer, checker, rewriter) with its own policy for the writer and for the rewriter, the checker served
 * untrained by the default policy (test/e2e/multiagent-run.ts), then checks against what the store holds:
 *  - the CodeLens above sqlAgent: its tooltip names the policies the run trained;
 *  - the dashboard: one chart per policy metric with a line per policy, at the values the store has, the run's
 *    policies in its header, and a note or none on its steps;
 *  - a trained step's GRPO group (opened from the reward curve, beside the dashboard, at half width): each sample's
 *    answer is the query the agent returned and its rows (never the checker's "yes"), the gold query and rows beside
 *    them, how many distinct answers the cards fold; every call row names its role and number, the policy and
 *    version that served it, and the checker's calls say they were not trained;
 *  - a checker call's detail: why it was not trained (the run's rule), the same call number as the card, and the
 *    states view numbering the calls the same way;
 *  - Back returns to the group; the group view again at full width.
 * Screenshots go to test-results/e2e/multiagent-*.png.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../daemon/store/index.js';
import { spanKind } from '../../protocol/span-reading.js';
import { fmtMetric } from '../../webview/dashboard/format.js';
import type { MetricPoint, Span, TrainingRun, Transition } from '../../protocol/store.js';
import { beginE2e, cutOff, gotoLine, openFile, ROOT, runCommand, webview, webviewWith, inWorkbench } from './harness.js';
import { SQL_POLICIES, SQL_UNTRAINED_ROLE, trainSqlTwoPolicies } from './multiagent-run.js';

interface CallWant {
  spanId: string;
  role: string;
  policy: string | null;
  version: number | null;
}
interface Want {
  run: TrainingRun;
  latest: (name: string) => number;
  step: number;
  groupId: string;
  rolloutId: string;
  /** The rollout's LLM calls in the order they started. */
  calls: CallWant[];
  final: { sql: string; result: string };
  gold: { sql: string; result: string };
  /** Distinct final queries and rows among the group's samples. */
  distinct: number;
  /** The last step on the reward chart (training rewards and validations). */
  lastStep: number;
  /** Whether a policy updated at the last training step (its updates count moved). */
  updatedLast: (policy: string) => boolean;
}

const objectOf = (spans: Span[], kind: string): { sql: string; result: string } => {
  const s = spans.filter((x) => x.attributes['agl.object.kind'] === kind).at(-1);
  assert.ok(s, `the sql agent emitted its ${kind}`);
  return JSON.parse(String(s.attributes['agl.object.json']));
};

/** What the views must show, read from the store the run wrote. */
async function readExpected(dataDir: string): Promise<Want> {
  const store = await openStore({ dataDir });
  try {
    const [run] = await store.listTrainingRuns();
    assert.ok(run, 'the run is in the store');
    const points: MetricPoint[] = await store.queryMetrics(run.id);
    const latest = (name: string) => points.filter((p) => p.name === name).sort((a, b) => b.step - a.step)[0]!.value;
    const updatedLast = (policy: string) => {
      const [last, before] = points.filter((p) => p.name === `policy/${policy}/updates`).sort((a, b) => b.step - a.step);
      return last!.value > (before?.value ?? 0);
    };
    const transitions: Transition[] = await store.queryTransitions({ runId: run.id, limit: 10_000 });
    // The newest trained step with a rewriter call if any (a group where all three roles acted), else the newest.
    const withRewriter = transitions.filter((t) => t.agentName === 'rewriter');
    const pick = (withRewriter.length ? withRewriter : transitions).sort((a, b) => b.step - a.step)[0]!;
    const spans = await store.querySpans({ rolloutId: pick.rolloutId, attemptId: pick.attemptId });
    const calls = spans
      .filter((s) => spanKind(s) === 'llm')
      .sort((a, b) => a.startTime - b.startTime || a.sequenceId - b.sequenceId)
      .map((s) => ({
        spanId: s.spanId,
        role: String(s.attributes['agl.agent.name']),
        policy: (s.attributes['agl.policy.name'] as string | undefined) ?? null,
        version: (s.attributes['agl.policy.version'] as number | undefined) ?? null,
      }));
    const members = [...new Set(transitions.filter((t) => t.step === pick.step && t.groupId === pick.groupId).map((t) => `${t.rolloutId} ${t.attemptId}`))];
    const answers = new Set<string>();
    for (const m of members) {
      const [rolloutId, attemptId] = m.split(' ') as [string, string];
      const final = objectOf(await store.querySpans({ rolloutId, attemptId }), 'sql.final');
      answers.add(JSON.stringify([final.sql, final.result]));
    }
    return {
      run,
      latest,
      step: pick.step,
      groupId: pick.groupId,
      rolloutId: pick.rolloutId,
      calls,
      final: objectOf(spans, 'sql.final'),
      gold: objectOf(spans, 'sql.expected'),
      distinct: answers.size,
      lastStep: Math.max(...points.filter((p) => p.name === 'reward/mean' || p.name === 'val/reward').map((p) => p.step)),
      updatedLast,
    };
  } finally {
    await store.close();
  }
}

test(
  'VS Code on a real two-policy sql run: roles, policies and answers in the lens, dashboard, group view and call detail',
  { timeout: 10 * 60_000 },
  async () => {
    const clock = beginE2e();
    const scratch = mkdtempSync(join(tmpdir(), 'agl-e2e-multiagent-'));
    const dataDir = join(scratch, 'agl-data');
    try {
      trainSqlTwoPolicies(dataDir, scratch);
      clock.mark('trained');
      const want = await readExpected(dataDir);
      const run = want.run;
      assert.deepEqual(Object.keys(run.config.policies as object), [...SQL_POLICIES]);

      await inWorkbench({ shots: 'multiagent', folder: join(ROOT, 'samples'), dataDir, clock, readyTimeout: 90_000 }, async ({ page, shot, mark }) => {
        // 1. The lens above sqlAgent: its tooltip says which policies the run trained.
        await openFile(page, 'sql/agent.ts');
        // sqlAgent's line, in view (a 900-pixel window does not show it from the top of the file).
        const agentLine =
          readFileSync(join(ROOT, 'samples', 'sql', 'agent.ts'), 'utf8')
            .split('\n')
            .findIndex((l) => l.includes('export const sqlAgent')) + 1;
        await gotoLine(page, agentLine);
        const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'held-out reward' }).first();
        await lens.waitFor({ state: 'visible', timeout: 60_000 });
        assert.match((await lens.getAttribute('title'))!, new RegExp(`training run ${run.id}.*The run trained one policy per role: writer, rewriter\\.`));
        await shot('01-codelens');
        mark('codelens');

        // 2. The dashboard: a chart per policy metric with a line per policy, at the store's values; the run's policies.
        await runCommand(page, 'Agent Lightning: Open Training Dashboard');
        const dash = webview(page);
        const policyLoss = dash.locator('.chart-card[data-chart="policy-loss"]');
        await policyLoss.locator('canvas').first().waitFor({ state: 'visible', timeout: 60_000 });
        await page.mouse.move(0, 0);
        for (const policy of SQL_POLICIES) {
          const value = policyLoss.locator(`.chart-value[data-metric="policy/${policy}/loss"]`);
          if (want.updatedLast(policy))
            assert.equal(await value.locator('b').innerText(), fmtMetric(want.latest(`policy/${policy}/loss`)), `policy ${policy} loss`);
          else assert.equal(await value.locator('.unmeasured').innerText(), 'no update', `policy ${policy}: no update at the last step, no loss measured`);
        }
        const updates = dash.locator('.chart-card[data-chart="policy-updates"]');
        for (const policy of SQL_POLICIES)
          assert.equal(
            Number(await updates.locator(`.chart-value[data-metric="policy/${policy}/updates"] b`).innerText()),
            want.latest(`policy/${policy}/updates`),
          );
        const roleCalls = await dash
          .locator('.chart-card[data-chart="role-calls"] .chart-value')
          .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
        assert.deepEqual(roleCalls, ['role/checker/calls', 'role/rewriter/calls', 'role/writer/calls'], 'the untrained checker is counted too');
        assert.match(await dash.locator('.cfg.roles').innerText(), /policies writer, rewriter/);
        assert.match((await dash.locator('.cfg.roles').getAttribute('title'))!, /every other role is served, untrained, by the default policy \(warmup\)/);
        await shot('02-dashboard');
        await dash.locator('.chart-card[data-chart="policy-loss"]').scrollIntoViewIfNeeded();
        await shot('03-dashboard-policies');
        mark('dashboard');

        // 3. The trained step's GRPO groups, opened from the reward curve (beside the dashboard: half width).
        const reward = dash.locator('.chart-card[data-chart="reward"]');
        await reward.scrollIntoViewIfNeeded();
        const over = reward.locator('.u-over');
        const lastStep = want.lastStep; // the reward chart's x axis: training steps and validations, 0..lastStep
        const ob = (await over.boundingBox())!;
        const at = { x: ob.x + 2 + (ob.width - 4) * (want.step / lastStep), y: ob.y + ob.height / 2 };
        await page.mouse.move(at.x, at.y);
        await over.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        await page.mouse.click(at.x, at.y);
        const groups = await webviewWith(page, '.group');
        await groups.locator('.view-header h1', { hasText: `step ${want.step}` }).waitFor({ state: 'visible', timeout: 30_000 });
        assert.match(await groups.locator('.roles-rule').first().innerText(), /trains writer \(own policy\), rewriter \(own policy\)/);
        const group = groups.locator(`.group[data-group-id="${want.groupId}"]`);
        await group.waitFor({ state: 'visible', timeout: 30_000 });
        // A zero-variance group starts folded (it teaches nothing): unfold it.
        if ((await group.getAttribute('class'))!.split(' ').includes('folded')) await group.locator('.group-toggle').click();
        await group.locator('.sample-card').first().waitFor({ state: 'visible', timeout: 30_000 });
        // The gold query once (the task's, the emitted expected output names it) and its rows beside the samples; how many
        // distinct answers the cards fold.
        assert.equal(await group.locator('.task-full dd[data-key="gold"]').innerText(), want.gold.sql);
        assert.equal(await group.locator('.expected-emitted .expected-same').innerText(), "(its sql is the task's gold above)");
        assert.equal(await group.locator('.expected-emitted [data-field="sql"]').count(), 0, 'the gold query is not shown twice');
        assert.equal(await group.locator('.expected-emitted [data-field="result"] .fold-content').innerText(), want.gold.result);
        assert.equal(await group.locator('.distinct-answers').getAttribute('data-distinct'), String(want.distinct));
        // One card per sample: the picked rollout's card.
        await groups.locator('vscode-checkbox.merge-toggle').click();
        const card = group.locator(`.sample-card[data-rollout-id="${want.rolloutId}"]`);
        await card.waitFor({ state: 'visible', timeout: 15_000 });
        assert.equal(await card.locator('.answer [data-field="sql"]').innerText(), want.final.sql, "the answer is the agent's final query, not an LLM reply");
        assert.equal(await card.locator('.answer [data-field="result"] .fold-content').innerText(), want.final.result);
        const rows = await card.locator('.call-row').evaluateAll((els) =>
          els.map((e) => ({
            role: (e as HTMLElement).dataset.role,
            call: Number((e as HTMLElement).dataset.call),
            training: (e as HTMLElement).dataset.training,
            policy: e.querySelector('.chip.policy')?.textContent ?? null,
            untrained: e.querySelector('.chip.untrained')?.textContent ?? null,
          })),
        );
        assert.deepEqual(
          rows.map((r) => [r.role, r.call]),
          want.calls.map((c, i) => [c.role, i + 1]),
          'every call in the order it ran, numbered as every view numbers it',
        );
        for (const [i, r] of rows.entries()) {
          const c = want.calls[i]!;
          assert.equal(
            r.policy,
            `${c.policy}${c.version === null ? '' : ` v${c.version}`}`,
            `call #${i + 1} (${c.role}): the policy and version that served it`,
          );
          if (c.role === SQL_UNTRAINED_ROLE) {
            assert.equal(r.training, 'not-selected');
            assert.equal(r.untrained, 'not trained');
          } else assert.equal(r.training, 'trained', `call #${i + 1} (${c.role}) was trained at step ${want.step}`);
        }
        assert.deepEqual(await cutOff(groups, '.view-header'), [], 'the group view header fits its half of the window');
        assert.deepEqual(await cutOff(groups, `.group[data-group-id="${want.groupId}"] .sample-card`), [], 'the card fits');
        await card.scrollIntoViewIfNeeded();
        await shot('04-group-view');
        mark('group view');

        // 4. A checker call's detail: why it was not trained, and the same number; then the states view.
        const checker = want.calls.findIndex((c) => c.role === SQL_UNTRAINED_ROLE);
        await card.locator(`.call-row[data-call="${checker + 1}"]`).click();
        const detail = groups.locator(`.detail-llm[data-role="${SQL_UNTRAINED_ROLE}"]`);
        await detail.waitFor({ state: 'visible', timeout: 30_000 });
        assert.equal((await detail.locator('.call-number').innerText()).trim(), `· call #${checker + 1}`);
        assert.equal(
          (await detail.locator('.training-note').innerText()).trim(),
          `Not trained: run ${run.id} trains only writer, rewriter (the roles given a policy of their own); role checker is served by the default policy (warmup), untrained.`,
        );
        assert.doesNotMatch(await detail.innerText(), /can be trained/);
        await detail.scrollIntoViewIfNeeded();
        await shot('05-call-detail');
        await groups.locator('vscode-tab-header.tab-states').click();
        await groups.locator('.states-table').waitFor({ state: 'visible', timeout: 15_000 });
        const headers = await groups
          .locator('.states-table th[data-call]')
          .evaluateAll((els) => els.map((e) => [Number((e as HTMLElement).dataset.call), e.querySelector('.step-label')?.textContent ?? '']));
        assert.deepEqual(
          headers.map(([n]) => n).sort((a, b) => Number(a) - Number(b)),
          want.calls.map((_, i) => i + 1),
        );
        for (const [n, label] of headers) assert.match(String(label), new RegExp(`^${want.calls[Number(n) - 1]!.role} call #${n}$`));
        const tallest = await groups.locator('.states-table thead th').evaluateAll((els) => Math.max(...els.map((e) => e.getBoundingClientRect().height)));
        assert.ok(tallest < 160, `the step headers stay short (${tallest} px): a long tool result is cut, the whole text on demand`);
        await shot('06-states');
        mark('call detail and states');

        // 5. Back to the group (the view it came from), then at full width: the dashboard's editors closed.
        await groups.locator('.view-header .back').click();
        await group.locator(`.sample-card[data-rollout-id="${want.rolloutId}"]`).waitFor({ state: 'visible', timeout: 15_000 });
        await runCommand(page, 'View: Close Editors in Other Groups');
        await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
        const full = await webviewWith(page, '.group');
        await full.locator(`.group[data-group-id="${want.groupId}"] .sample-card`).first().waitFor({ state: 'visible', timeout: 15_000 });
        const width = await full.locator('body').evaluate(() => document.documentElement.clientWidth);
        assert.ok(width > 1000, `the group view spans the window (${width} px)`);
        assert.deepEqual(await cutOff(full, '.view-header'), []);
        await full.locator(`.group[data-group-id="${want.groupId}"]`).scrollIntoViewIfNeeded();
        await shot('07-group-view-full-width');
        mark('full width');
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
    }
  },
);
