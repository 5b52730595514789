/**
 * `agl judge check RUN --labels` (daemon/judge/check-labels.ts): a judge checked against people's labels of a run's
 * rollouts, given through the daemon's HTTP API as the viewer gives them. Against a scripted judge over HTTP (the
 * answer key, swayed by the place it shows a trajectory at): the true-positive and true-negative rates and Cohen's
 * kappa of the good/bad labels, Spearman of the score labels, and the share of pairs whose verdict flips when shown in
 * the other order, each against hand-computed values; no label says so and exits 1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { binaryAgreement } from '../../daemon/judge/check-labels.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { humanLabelSpan, type HumanLabel } from '../../protocol/human-label.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { startDaemon, type Harness } from '../helpers/daemon.js';
import { answerKeyJudge, firstShownJudge, startScriptedJudge, type ScriptedJudge } from '../helpers/scripted-judge.js';
import { ANSWER_KEY, storedRollout } from './stored-rollouts.js';

describe("agreement with people's good/bad labels", () => {
  it("TPR, TNR and Cohen's kappa by hand", () => {
    const items = [
      ...[true, true, true, false].map((judgedGood) => ({ good: true, judgedGood })),
      ...[false, false, true, true].map((judgedGood) => ({ good: false, judgedGood })),
    ];
    // po = 5/8; chance = (4*5 + 4*3)/64 = 1/2; kappa = (5/8 - 1/2) / (1/2) = 1/4.
    assert.deepEqual(binaryAgreement(items), { good: 4, bad: 4, truePositives: 3, trueNegatives: 2, tpr: 0.75, tnr: 0.5, kappa: 0.25 });
    assert.equal(binaryAgreement([{ good: true, judgedGood: true }]).kappa, null, 'one label: chance agreement is 1, kappa undefined');
  });
});

describe('agl judge check --labels', () => {
  let d: Harness;
  let judge: ScriptedJudge;
  let runId: string;
  let unlabelled: string;
  const { rubric, ann, bob, cy } = ANSWER_KEY;

  before(async () => {
    d = await startDaemon();
    // The answer key, plus 0.2 for the first trajectory shown and minus 0.2 for the other: alone it scores a right answer 1, a wrong one 0.2.
    judge = await startScriptedJudge({ score: firstShownJudge(answerKeyJudge(), 0.2) });
    const config = parseTrainConfig({ judge: { url: judge.url, model: 'scripted-judge', rubric } });
    runId = (await d.store.createTrainingRun({ agent: 'a.ts#agent', config, totalSteps: 2 })).id;
    const labelled = async (t: typeof ann, answer: string, label: HumanLabel, mode: 'train' | 'val' = 'train') => {
      const g = await storedRollout(d.store, t, { answer, reward: 1 }, { mode, runId });
      await d.client.addSpans([humanLabelSpan({ rolloutId: g.rollout.id, attemptId: g.trajectory!.attemptId }, label, Date.now())]);
    };
    const [good, bad] = [{ kind: 'good' } as const, { kind: 'bad' } as const];
    const score = (s: number) => ({ kind: 'score', score: s }) as const;
    await labelled(ann, '38', good); // judged good: TP
    await labelled(ann, '37', bad, 'val'); // TN
    await labelled(ann, '38', bad); // FP: the person saw a fault the key does not
    await labelled(bob, '12', good); // TP
    await labelled(bob, '13', good); // FN
    await labelled(bob, '13', bad); // TN
    await labelled(bob, '12', score(0.6));
    await labelled(cy, '11', good); // TP
    await labelled(cy, '10', bad); // TN
    await labelled(cy, '11', score(0.9));
    await labelled(cy, '12', score(0.2));
    await storedRollout(d.store, cy, { answer: '11', reward: 1 }, { runId }); // no label: not checked
    unlabelled = (await d.store.createTrainingRun({ agent: 'a.ts#agent', config, totalSteps: 1 })).id;
    await storedRollout(d.store, ann, { answer: '38', reward: 1 }, { runId: unlabelled });
  });
  after(async () => {
    await judge.close();
    await d.close();
  });

  it('reports TPR, TNR and kappa for good/bad, Spearman for scores, and how often the verdict flips with the order', async () => {
    const { code, out } = await runAgl(['judge', 'check', runId, '--labels', '--judge-mode', 'single', '--json'], d.dataDir);
    assert.equal(code, 0, out);
    const r = JSON.parse(out.slice(out.indexOf('{'))) as {
      rollouts: unknown[];
      binary: Record<string, number>;
      scores: { n: number; spearman: number };
      position: Record<string, number>;
    };
    assert.equal(r.rollouts.length, 11);
    // Good: ann 38, bob 12, cy 11 judged good, bob 13 not (TPR 3/4); bad: ann 37, bob 13, cy 10 judged bad, ann 38 not (TNR 3/4).
    // po = 6/8, chance = (4*4 + 4*4)/64 = 1/2: kappa = (3/4 - 1/2) / (1/2) = 1/2.
    assert.deepEqual(r.binary, { good: 4, bad: 4, truePositives: 3, trueNegatives: 3, tpr: 0.75, tnr: 0.75, kappa: 0.5 });
    // Scores: the judge 1 (bob 12), 1 (cy 11), 0.2 (cy 12) against 0.6, 0.9, 0.2: ranks [2.5, 2.5, 1] and [2, 3, 1],
    // rho = 1.5 / sqrt(1.5 * 2) = sqrt(3)/2.
    assert.equal(r.scores.n, 3);
    assert.ok(Math.abs(r.scores.spearman - Math.sqrt(3) / 2) < 1e-12, String(r.scores.spearman));
    // Pairs within a task: ann 3, bob 6, cy 6. A pair the key scores alike flips (the first shown wins): ann (38, 38),
    // bob (12, 12) and (13, 13), cy (11, 11) and (10, 12): 5 of 15.
    assert.deepEqual(r.position, { pairs: 15, flipped: 5, flipRate: 1 / 3 });
    const pairCalls = judge.requests.filter((q) => q.trajectories.length === 2);
    assert.equal(pairCalls.length, 30, 'each pair shown in both orders');
  });

  it('says it in words; a judge that ignores the order flips none; a run without labels says how to give them and exits 1', async () => {
    const text = await runAgl(['judge', 'check', runId, '--labels', '--judge-mode', 'single'], d.dataDir);
    assert.equal(text.code, 0, text.out);
    assert.match(text.out, /11 labelled rollouts \(4 good, 4 bad, 3 scored\)/);
    assert.match(text.out, /true-positive rate 0\.75 \(3 of 4\), true-negative rate 0\.75 \(3 of 4\), Cohen's kappa 0\.50/);
    assert.match(text.out, /scores: Spearman 0\.87 over 3/);
    assert.match(text.out, /position: 15 pairs of a task shown in both orders, the verdict flipped in 5 \(rate 0\.33\): the place/);
    const fair = await startScriptedJudge({ score: answerKeyJudge() });
    try {
      const unswayed = await runAgl(['judge', 'check', runId, '--labels', '--judge-url', fair.url], d.dataDir);
      assert.equal(unswayed.code, 0, unswayed.out);
      assert.match(unswayed.out, /the verdict flipped in 0 \(rate 0\.00\)\n/);
    } finally {
      await fair.close();
    }
    const none = await runAgl(['judge', 'check', unlabelled, '--labels'], d.dataDir);
    assert.equal(none.code, 1, none.out);
    assert.match(none.out, /no rollout of run \S+ has a label: mark some good or bad in the trajectory viewer/);
  });
});
