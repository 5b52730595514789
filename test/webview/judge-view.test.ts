/**
 * What an LLM judge said, in the trajectory viewer (chromium, strict CSP): a group judged by the real judge step
 * (daemon/algorithm/step-judge.ts, a scripted judge model over HTTP, the daemon's store through the typed client) and
 * trained on as the trainer does (its credit and GRPO advantages stored), then shown: the group view ranks the samples by
 * the judge's score with each reason and, folded, the text the judge read; each card has the reason under its reward;
 * a rollout's summary and its calls' detail have the explanation beside the reward; the judge's own span shows its
 * score, the place the rollout was shown at, and the call's tokens and cost; the rollout the judge was shown twice
 * (judge.retest) says where again and its second score.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { assignCredit } from '../../daemon/algorithm/credit.js';
import { computeAdvantages } from '../../daemon/algorithm/grpo.js';
import type { GroupRollout } from '../../daemon/algorithm/rollouts.js';
import { StepJudge } from '../../daemon/algorithm/step-judge.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { Judge } from '../../daemon/judge/judge.js';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import type { Transition } from '../../protocol/store.js';
import { answerKeyJudge, startScriptedJudge, type ScriptedJudge } from '../helpers/scripted-judge.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { recordRollout } from './seed.js';

const RUN = 'run-judged';
const TASK = 'task-12x7';
const RUBRIC = 'A trajectory scores 1 when its final answer is the right total, else 0.\n- What is 12*7+3? => 87';
const Q = { question: 'What is 12*7+3?', expected: '87', toolExpr: '12*7+3', toolResult: '87' };
const ANSWERS = ['87', '84', '87', '90'];

describe("an LLM judge's words in the trajectory viewer", () => {
  let daemon: Daemon;
  let judgeServer: ScriptedJudge;
  let view: WebviewSession;
  const ids: string[] = [];

  before(async () => {
    daemon = await startDaemon();
    judgeServer = await startScriptedJudge({ score: answerKeyJudge() });
    const config = parseTrainConfig({
      training: { grpo: { scaleRewards: 'group' } },
      judge: { url: judgeServer.url, model: 'gpt-judge', rubric: RUBRIC, priceIn: 2, priceOut: 8 },
    });
    const client = daemon.client;
    await client.createTrainingRun({ id: RUN, agent: 'samples/calc/agent.ts#calcAgent', totalSteps: 1, config: config as unknown as Record<string, unknown> });
    // The agent paid every answer 0.5: the judge's scores replace that.
    const groups: GroupRollout[] = [];
    let at = Date.now() - 600_000;
    for (const [k, answer] of ANSWERS.entries()) {
      const rec = await recordRollout(client, { ...Q, answer, reward: 0.5 }, { runId: RUN, step: 1, taskId: TASK, sample: k }, (at += 2000));
      ids.push(rec.rolloutId);
      const spans = await client.querySpans({ rolloutId: rec.rolloutId, attemptId: rec.attemptId });
      groups.push({
        rollout: (await client.getRollout(rec.rolloutId))!,
        task: { id: TASK, input: { question: Q.question, answer: 87 } },
        trajectory: spansToTrajectory(spans),
        error: null,
      });
    }
    const judge = new Judge({ settings: config.judge!, rubric: RUBRIC, apiKey: '', seed: 1 });
    const round = await new StepJudge(judge, client, { runId: RUN, step: 1 }).judgeRound(groups);
    assert.equal(round.kept.length, 4);
    // What the trainer then stores: each call's credit (the judged reward) and its GRPO advantage.
    const items: Omit<Transition, 'advantage'>[] = groups.flatMap((g) =>
      assignCredit(g.trajectory!, config.training.credit).map((c) => ({
        runId: RUN,
        step: 1,
        rolloutId: g.rollout.id,
        attemptId: g.trajectory!.attemptId,
        spanId: c.step.spanId,
        groupId: TASK,
        index: c.step.index,
        agentName: c.step.agentName,
        reward: c.finalReward,
        credit: c.credit,
        promptTokens: c.step.promptIds.length,
        completionTokens: c.step.completionIds.length,
      })),
    );
    const adv = computeAdvantages(items, config.training.grpo);
    await client.addTransitions(items.map((it, k) => ({ ...it, advantage: adv.advantages[k]! })));
    view = await openWebview('trajectory', trajectoryHandlers(client), { width: 1300 });
  });
  after(async () => {
    await view?.close();
    await judgeServer?.close();
    await daemon?.close();
  });

  it("the group view ranks the samples by the judge's score, each with its reason and the text the judge read", async () => {
    const page = view.page;
    await view.notify('trajectory/show', { view: { kind: 'group', runId: RUN, step: 1 } });
    await page.waitForSelector('.judge-ranking');
    assert.match((await page.locator('.judge-ranking .metric-label').textContent())!, /The judge's ranking · gpt-judge, group mode/);
    const ranked = await page.locator('.judge-rank').evaluateAll((els) =>
      els.map((e) => ({
        rank: (e as HTMLElement).dataset.rank,
        id: (e as HTMLElement).dataset.rolloutId,
        score: e.querySelector('.judge-score')!.textContent,
        why: e.querySelector('.judge-explanation')!.textContent,
      })),
    );
    // Best first; equal scores share a rank (in the order the judge read them).
    assert.deepEqual(ranked.map((r) => [r.rank, r.score, r.why]).sort(), [
      ['1', '#1 · 1', 'the answer 87 is the expected 87'],
      ['1', '#1 · 1', 'the answer 87 is the expected 87'],
      ['3', '#3 · 0', 'the answer 84 is not 87'],
      ['3', '#3 · 0', 'the answer 90 is not 87'],
    ]);
    assert.deepEqual(
      ranked.map((r) => r.rank),
      ['1', '1', '3', '3'],
    );
    assert.deepEqual(new Set(ranked.slice(0, 2).map((r) => r.id)), new Set([ids[0], ids[2]]));
    // judge.retest: one of the four was shown twice in the call (5 places): its line says where again and its second
    // score; the group's scores spread, so a call of its own scored the group again: the other three say so.
    const again = await page.locator('.judge-rank').evaluateAll((els) => els.map((e) => e.textContent ?? '').filter((t) => t.includes('shown again')));
    assert.equal(again.length, 4);
    assert.equal(again.filter((t) => /shown \d(st|nd|rd|th) · shown again \d(st|nd|rd|th): [01] \(a retest, never a reward\)/.test(t)).length, 1);
    assert.equal(again.filter((t) => /shown again in a call of its own: [01] \(a retest, never a reward\)/.test(t)).length, 3);
    // The cards' rewards are the judge's (the agent's 0.5 replaced), its words under them.
    const cards = await page
      .locator(`.group[data-group-id="${TASK}"] .sample-card`)
      .evaluateAll((els) => els.map((e) => [e.querySelector('.metric-value.reward')!.textContent, e.querySelector('.judge-explanation')?.textContent ?? null]));
    assert.deepEqual(cards, [
      ['1', 'the answer 87 is the expected 87'],
      ['0', 'the answer 84 is not 87'],
      ['0', 'the answer 90 is not 87'],
    ]);
    await page.locator('.judge-rank').first().locator('details.judge-read summary').click();
    const read = await page.locator('.judge-rank').first().locator('details.judge-read pre').innerText();
    assert.match(read, /LLM call #1 \(calc\):\n {2}\[system\] You are a calculator agent/);
    assert.match(read, /Tool: calculator\(12\*7\+3\) → 87/);
    assert.match(read, /Final answer: 87/);
    assert.deepEqual(view.problems, []);
    await view.screenshot('judge-group');
  });

  it("a rollout's summary and its calls' detail say the explanation beside the reward; the judge's span shows its call", async () => {
    const page = view.page;
    await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId: ids[1] } });
    await page.waitForSelector('.rollout-judge');
    assert.match(await page.locator('.rollout-judge').innerText(), /judge gpt-judge, group mode, shown \d\w\w of 5: the answer 84 is not 87/);
    await page.locator('.span-row[data-kind="llm"]').first().click();
    await page.waitForSelector('.detail-llm .judge-reason');
    assert.match(await page.locator('.detail-llm .judge-reason').innerText(), /the answer 84 is not 87/);
    assert.equal(await page.locator('.detail-llm .metric:has(.metric-label:text-is("Reward")) .metric-value').innerText(), '0');
    const rewards = await page.locator('.span-row[data-kind="reward"]').allInnerTexts();
    assert.match(rewards.join('|'), /agent's reward · the judge's replaced it\s*0\.500\|final reward · judge's\s*0/);
    // Two judge calls on the rollout: the group's call (its verdict), then judge.retest's call of its own.
    assert.equal(await page.locator('.span-row[data-kind="judge"]').count(), 2);
    await page.locator('.span-row[data-kind="judge"]').first().click();
    await page.waitForSelector('.detail-judge .judge-metrics');
    const metrics = await page
      .locator('.detail-judge .judge-metrics .metric')
      .evaluateAll((els) => Object.fromEntries(els.map((e) => [e.querySelector('.metric-label')!.textContent, e.querySelector('.metric-value')!.textContent])));
    assert.equal(metrics['Judge'], 'gpt-judge');
    assert.equal(metrics['Score'], '0');
    assert.match(metrics['Shown']!, /^\d(st|nd|rd|th) of 5$/, 'four rollouts, one of them shown twice');
    assert.equal(metrics['Tries'], '1');
    assert.match(metrics['Cost']!, /^\$0\.\d{4}$/);
    assert.match((await page.locator('.detail-judge details.judge-answer pre').textContent())!, /"scores"/);
    assert.deepEqual(view.problems, []);
    await view.screenshot('judge-rollout');
  });
});
