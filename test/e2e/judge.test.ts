/**
 * End-to-end in real VS Code (code-server + chromium + playwright-core): an LLM judge as the reward (#41 items 3 and 5),
 * as a user meets it. On an agent that scores nothing itself (fixtures/judged, copied into a scratch workspace under
 * test-results/ so the rubric it gets is never written into the sources), with a scripted judge model speaking the
 * OpenAI protocol over HTTP (test/helpers/scripted-judge.ts) and the judge settings empty:
 *  - Train This Agent offers "Use an LLM judge" as its fifth pick, saying why (its code names no reward); the judge's
 *    URL and model are asked and saved into the settings; rubric.md is written next to the agent from the template and
 *    opened beside it; the run trains with the judge (its recorded config names it and the rubric file);
 *  - the agent's CodeLens says "reward: judge";
 *  - the trajectory viewer, opened from the lens: a judged rollout's summary and its LLM call's detail show the judge's
 *    explanation beside the reward, and its GRPO group's view ranks the group by the judge with each reason.
 * Every expected value is read from the store the run wrote. Screenshots: test-results/e2e/judge-*.png.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openStore } from '../../daemon/store/index.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import type { Transition, TrainingRun } from '../../protocol/store.js';
import { draw, startScriptedJudge, type JudgeRequest, type ScoreLine } from '../helpers/scripted-judge.js';
import { openFile, pickItem, ROOT, runCommand, webview, type Page, inWorkbench } from './harness.js';

/** The scratch workspace: as deep under the repository as test/e2e/fixtures, so the agent's relative SDK import holds. */
const WORKSPACE = join(ROOT, 'test-results', 'e2e', 'judge-workspace');
const AGENT_DIR = join(WORKSPACE, 'judged');
const JUDGE_MODEL = 'scripted-judge';

/**
 * The walkthrough's judge: a score drawn from what it read (the built-in model's answers are noise, often of one
 * length: a drawn score still spreads a group), said in words with the score.
 */
function drawnJudge(r: JudgeRequest): ScoreLine[] {
  return r.trajectories.map((t) => {
    const score = Math.round(draw(5, t.text) * 100) / 100;
    return { trajectory: t.index, score, explanation: `it earns ${score.toFixed(2)} on this walkthrough's scale` };
  });
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Types into the open input box and accepts it. */
async function answerInput(page: Page, title: RegExp, text: string): Promise<void> {
  await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: 30_000 });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(text);
  await page.keyboard.press('Enter');
}

/** Train This Agent on the judged agent: data, its train.yaml, the built-in model, then the judge pick and endpoint. */
async function trainWithJudge(page: Page, judgeUrl: string, shot: (name: string) => Promise<void>): Promise<void> {
  await openFile(page, 'judged/agent.ts');
  await page.locator('.monaco-editor .view-line', { hasText: 'export const judgedAgent = rollout(async' }).first().click();
  await runCommand(page, 'Agent Lightning: Train This Agent');
  await pickItem(page, 'judged/data/train.jsonl', /training data \(1\/5\)/);
  await pickItem(page, 'judged/data/val.jsonl', /validation data/);
  await pickItem(page, "The agent's train.yaml", /budget \(3\/5\)/);
  await pickItem(page, 'builtin:0.8m', /model \(4\/5\)/);
  // The fifth pick, only for an agent without a reward: why it is offered, the judge first.
  const offer = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Use an LLM judge' }).first();
  await page.locator('.quick-input-widget .quick-input-title', { hasText: /reward \(5\/5\)/ }).waitFor({ state: 'visible', timeout: 30_000 });
  await offer.waitFor({ state: 'visible' });
  assert.match(await offer.innerText(), /its code never emits or returns a reward: a judge model scores each task's rollouts against a rubric/);
  const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
  assert.match(rows[0]!, /Use an LLM judge/, 'the judge first');
  assert.ok(
    rows.some((r) => r.includes('Train on its own reward')),
    'its own reward one choice away',
  );
  await shot('01-offer');
  await offer.click();
  // The settings have no judge yet: its server and model are asked for.
  await answerInput(page, /the judge model \(5\/5\): its OpenAI-compatible server/, judgeUrl);
  await answerInput(page, /the model to ask/, JUDGE_MODEL);
}

/** The newest run of the judged agent, from the store the daemon writes. */
async function readRun(dataDir: string): Promise<{ run: TrainingRun; transitions: Transition[]; verdicts: Map<string, ReturnType<typeof judgeVerdict>> }> {
  const store = await openStore({ dataDir });
  try {
    const run = (await store.listTrainingRuns()).find((r) => r.agent.endsWith('judged/agent.ts#judgedAgent'));
    assert.ok(run, 'the run of judgedAgent is in the store');
    const transitions = await store.queryTransitions({ runId: run.id, limit: 1000 });
    const verdicts = new Map<string, ReturnType<typeof judgeVerdict>>();
    for (const t of transitions) if (!verdicts.has(t.rolloutId)) verdicts.set(t.rolloutId, judgeVerdict(await store.querySpans({ rolloutId: t.rolloutId })));
    return { run, transitions, verdicts };
  } finally {
    await store.close();
  }
}

test('VS Code: a reward-less agent trained with an LLM judge: the offer, the rubric, the lens, the judge in the viewer', { timeout: 15 * 60_000 }, async () => {
  rmSync(WORKSPACE, { recursive: true, force: true });
  cpSync(join(ROOT, 'test', 'e2e', 'fixtures', 'judged'), AGENT_DIR, { recursive: true });
  const judge = await startScriptedJudge({ score: drawnJudge });
  try {
    await inWorkbench({ shots: 'judge', folder: WORKSPACE }, async ({ server, page, shot, mark }) => {
      // 1. Train This Agent offers the judge, asks its endpoint, writes the rubric and trains with it.
      await trainWithJudge(page, judge.url, shot);
      await page.locator('.tab', { hasText: 'rubric.md' }).first().waitFor({ state: 'visible', timeout: 30_000 });
      const rubric = readFileSync(join(AGENT_DIR, 'rubric.md'), 'utf8');
      assert.match(rubric, /^# How to judge judgedAgent$/m, 'written from the template, the agent named');
      const saved = JSON.parse(readFileSync(join(server.scratch, 'user', 'User', 'settings.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(saved['agentLightning.judge.url'], judge.url, 'the judge asked for is saved into the settings');
      assert.equal(saved['agentLightning.judge.model'], JUDGE_MODEL);
      const done = page.locator('.notification-toast', { hasText: /Agent Lightning: trained judgedAgent|training judgedAgent failed/ });
      await done.waitFor({ state: 'visible', timeout: 5 * 60_000 });
      await shot('02-trained');
      assert.match(await done.innerText(), /trained judgedAgent/, 'the run succeeded');
      mark('trained');
      const { run, transitions, verdicts } = await readRun(server.dataDir);
      const config = run.config as { judge?: { url: string; model: string; rubric: unknown; weight: unknown } };
      assert.deepEqual([config.judge?.url, config.judge?.model, config.judge?.weight], [judge.url, JUDGE_MODEL, null]);
      assert.deepEqual(config.judge?.rubric, { file: join(AGENT_DIR, 'rubric.md') });
      assert.ok(judge.requests.length > 0 && judge.requests.every((r) => r.rubric.includes('# How to judge judgedAgent')), 'the judge read the rubric file');
      assert.ok(transitions.length > 0, 'the run trained on judged rewards');

      // 2. The lens says which reward it trains on (the dashboard opened over the agent's editor, the rubric beside it:
      // the agent's file alone again, the notifications cleared, so the lens and then the viewer have room).
      await runCommand(page, 'Notifications: Clear All Notifications');
      await runCommand(page, 'View: Close All Editors');
      await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
      await openFile(page, 'judged/agent.ts');
      const lens = page.locator('.monaco-editor .codelens-decoration', { hasText: 'reward: judge' }).first();
      await lens.waitFor({ state: 'visible', timeout: 60_000 });
      assert.match(await lens.innerText(), /· reward: judge.*▶ Run.*⚡ Train/s);
      await shot('03-lens');
      mark('lens');

      // 3. The viewer from the lens: a judged rollout, the explanation beside its reward; its group ranked. The group is
      // one GRPO learns from (its judged rewards differ): the group view folds a group without spread.
      const groupOf = (t: Transition) => `${t.step}/${t.groupId}`;
      const spread = [...new Set(transitions.map(groupOf))].find((g) => new Set(transitions.filter((t) => groupOf(t) === g).map((t) => t.credit)).size > 1);
      assert.ok(spread, 'a trained group has judged rewards that differ');
      const members = [...new Set(transitions.filter((t) => groupOf(t) === spread).map((t) => t.rolloutId))];
      const rolloutId = members[0]!;
      const verdict = verdicts.get(rolloutId)!;
      assert.ok(verdict?.explanation, "the rollout has the judge's words");
      await lens.locator('a', { hasText: 'Trajectories' }).click();
      const viewer = webview(page);
      const row = viewer.locator(`.rollout-row[data-rollout-id="${rolloutId}"]`);
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await row.click();
      await viewer.locator('.rollout-judge').waitFor({ state: 'visible', timeout: 30_000 });
      assert.match(
        await viewer.locator('.rollout-judge').innerText(),
        new RegExp(`judge ${JUDGE_MODEL}, group mode, shown \\d\\w\\w of 5: ${escape(verdict.explanation)}`),
      );
      await viewer.locator('.span-row[data-kind="llm"]').first().click();
      await viewer.locator('.detail-llm .judge-reason').waitFor({ state: 'visible', timeout: 30_000 });
      assert.match(await viewer.locator('.detail-llm .judge-reason').innerText(), new RegExp(escape(verdict.explanation)));
      const shown = Number(await viewer.locator('.detail-llm .metric:has(.metric-label:text-is("Reward")) .metric-value').innerText());
      assert.ok(Math.abs(shown - verdict.reward!) < 5e-3, `the call's reward is the judge's: ${shown} vs ${verdict.reward}`);
      await shot('04-call');
      await viewer.locator('.open-group').click();
      const groupView = viewer.locator(`.group[data-group-id="${spread.split('/').slice(1).join('/')}"]`);
      await groupView.locator('.judge-ranking').waitFor({ state: 'visible', timeout: 30_000 });
      assert.match((await groupView.locator('.judge-ranking .metric-label').textContent())!, new RegExp(`The judge's ranking · ${JUDGE_MODEL}, group mode`));
      const ranked = await groupView
        .locator('.judge-rank')
        .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.rolloutId!, e.querySelector('.judge-explanation')!.textContent!]));
      assert.deepEqual(ranked.sort(), members.map((id) => [id, verdicts.get(id)!.explanation!]).sort(), "the group's rollouts, each with the judge's reason");
      await groupView.locator('.judge-ranking').scrollIntoViewIfNeeded();
      await shot('05-group');
      mark('viewer');
    });
  } finally {
    await judge.close();
  }
});

after(() => {
  if (existsSync(WORKSPACE)) rmSync(WORKSPACE, { recursive: true, force: true });
});
