/**
 * People's labels (protocol/human-label.ts): a rollout marked good, bad or given a score is stored through the
 * daemon's real HTTP API as a reward span whose source is `human`, and read back as the rollout's label (the latest
 * one given). Training never takes it for the reward unless the run asks (training.useHumanLabels,
 * --use-human-labels): the adapter and credit read the agent's own, and so does every final-reward reader.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { assignCredit, finalReward } from '../../daemon/algorithm/credit.js';
import { trustedReward } from '../../daemon/algorithm/judge-divergence.js';
import { HUMAN_REWARD_SOURCE, humanLabelOf, humanLabelSpan } from '../../protocol/human-label.js';
import { finalReward as finalRewardOfSpans } from '../../protocol/span-reading.js';
import { AGL } from '../../protocol/spans.js';
import { TRAIN_OPTIONS, configOverrides } from '../../protocol/train-options.js';
import { startDaemon, type Harness } from '../helpers/daemon.js';
import { storedRollout } from './stored-rollouts.js';

describe("people's labels of rollouts", () => {
  let d: Harness;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.close());

  const task = { id: 'ann', input: { question: 'Ann has 23 pens, gets 15 more.', answer: 38 } };

  it('a label given through the HTTP API is a reward span of source human, read back as the latest label', async () => {
    const g = await storedRollout(d.store, task, { answer: '38', reward: 0.25 });
    const target = { rolloutId: g.rollout.id, attemptId: g.trajectory!.attemptId };
    await d.client.addSpans([humanLabelSpan(target, { kind: 'good' }, Date.now())]);
    let spans = await d.client.querySpans({ rolloutId: target.rolloutId, attemptId: 'latest' });
    const label = spans.find((s) => s.attributes[AGL.rewardSource] === HUMAN_REWARD_SOURCE);
    assert.ok(label, 'the label is stored on the rollout');
    assert.equal(label.attributes[AGL.rewardValue], 1);
    assert.deepEqual({ kind: humanLabelOf(spans)?.kind, value: humanLabelOf(spans)?.value }, { kind: 'good', value: 1 });
    // Relabelled with a score: the latest label is the rollout's.
    await d.client.addSpans([humanLabelSpan(target, { kind: 'score', score: 0.4 }, Date.now() + 5)]);
    spans = await d.client.querySpans({ rolloutId: target.rolloutId, attemptId: 'latest' });
    assert.deepEqual({ kind: humanLabelOf(spans)?.kind, value: humanLabelOf(spans)?.value }, { kind: 'score', value: 0.4 });

    // Nothing reads it as the agent's reward: the final reward, the adapter and credit keep the agent's 0.25.
    assert.equal(finalRewardOfSpans(spans), 0.25);
    const trajectory = spansToTrajectory(spans);
    assert.equal(finalReward(trajectory), 0.25);
    assert.deepEqual(
      assignCredit(trajectory).map((c) => c.credit),
      [0.25],
    );
    // Unless the run asks: then the label is the final reward.
    const asked = spansToTrajectory(spans, { useHumanLabels: true });
    assert.equal(finalReward(asked), 0.4);
    assert.deepEqual(
      assignCredit(asked).map((c) => c.credit),
      [0.4],
    );
  });

  it("the viewer's rollouts list shows no reward for a rollout whose only reward-like span is a label", async () => {
    const g = await storedRollout(d.store, task, { answer: '38' });
    await d.client.addSpans([humanLabelSpan({ rolloutId: g.rollout.id, attemptId: g.trajectory!.attemptId }, { kind: 'good' }, Date.now())]);
    const page = await d.client.getRolloutsView({ limit: 50 });
    const item = page.items.find((i) => i.rollout.id === g.rollout.id);
    assert.ok(item);
    assert.equal(item.reward, null);
  });

  it("the divergence monitor's trusted reward is a rollout's label where it has one, else the agent's own", async () => {
    const labelled = await storedRollout(d.store, task, { answer: '38', reward: 1 });
    const own = await storedRollout(d.store, task, { answer: '37', reward: 0.5 });
    await d.client.addSpans([humanLabelSpan({ rolloutId: labelled.rollout.id, attemptId: labelled.trajectory!.attemptId }, { kind: 'bad' }, Date.now())]);
    assert.equal(await trustedReward(d.store, [labelled, own]), (0 + 0.5) / 2);
  });

  it('a bad label is refused naming the field; the run asks with training.useHumanLabels or --use-human-labels', () => {
    assert.throws(() => humanLabelSpan({ rolloutId: 'r', attemptId: 'a' }, { kind: 'score', score: 1.5 }, 0), /label\.score: 1\.5/);
    assert.throws(() => humanLabelSpan({ rolloutId: 'r', attemptId: 'a' }, { kind: 'great' } as never, 0), /label\.kind: 'great'/);
    assert.equal(parseTrainConfig({}).training.useHumanLabels, false);
    assert.equal(parseTrainConfig(configOverrides(TRAIN_OPTIONS, { 'use-human-labels': true })).training.useHumanLabels, true);
  });
});
