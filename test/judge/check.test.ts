/**
 * `agl judge check RUN` (daemon/judge/check.ts, daemon/commands/judge.ts) and the agreement it reports
 * (daemon/judge/agreement.ts): a run's validation rollouts scored by a scripted judge over HTTP and compared with the
 * agent's own rewards: pairwise accuracy over the pairs whose own rewards differ (a judge tie counts half), Spearman
 * with ties given their mean rank; where they disagree most, with the judge's words; nothing to compare says why and
 * exits 1; the judge named by the run, a config or the flags; how far the judge agrees with itself (a trajectory
 * shown twice: judge.retest). The store is left as it was.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { agreement, ranks, spearman } from '../../daemon/judge/agreement.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { answerKeyJudge, startScriptedJudge, type ScriptedJudge } from '../helpers/scripted-judge.js';
import { ANSWER_KEY, storedRollout } from './stored-rollouts.js';

describe('agreement between a judge and the agent', () => {
  it('ranks share their mean on ties; Spearman is 1 in order, -1 reversed, null when a side is constant', () => {
    assert.deepEqual(ranks([0.2, 0.9, 0.2, 0.5]), [1.5, 4, 1.5, 3]);
    assert.equal(spearman([1, 2, 3, 4], [10, 20, 30, 40]), 1);
    assert.equal(spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1);
    assert.equal(spearman([1, 2, 3], [1, 1, 1]), null);
    assert.ok(Math.abs(spearman([1, 2, 3, 4], [1, 3, 2, 4])! - 0.8) < 1e-12);
  });

  it('pairwise accuracy over pairs whose own rewards differ, a judge tie counting half; Spearman within groups of 3+', () => {
    const a = agreement([
      [
        { judge: 0.9, agent: 1 },
        { judge: 0.1, agent: 0 },
        { judge: 0.5, agent: 0 },
      ],
      [
        { judge: 0.3, agent: 1 },
        { judge: 0.3, agent: 0 },
      ],
    ]);
    // Group 1: (1,0) agree, (1,0) agree, (0,0) not a pair; group 2: a tie: half.
    assert.equal(a.pairs, 3);
    assert.equal(a.pairwiseAccuracy, 2.5 / 3);
    assert.equal(a.spearmanGroups, 1);
    assert.ok(Math.abs(a.spearman! - spearman([0.9, 0.1, 0.5], [1, 0, 0])!) < 1e-12);
    assert.deepEqual(agreement([]), { pairs: 0, pairwiseAccuracy: null, spearman: null, spearmanGroups: 0 });
  });
});

describe('agl judge check', () => {
  let dataDir: string;
  let judge: ScriptedJudge;
  let runId: string;
  let bare: string;
  const { rubric, ann, bob, cy } = ANSWER_KEY;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'agl-judge-check-'));
    judge = await startScriptedJudge({ score: answerKeyJudge() });
    const store = new SqliteStore(join(dataDir, 'store.sqlite'));
    const config = parseTrainConfig({ judge: { url: judge.url, model: 'scripted-judge', rubric } });
    const run = await store.createTrainingRun({ agent: 'a.ts#agent', config, totalSteps: 5 });
    runId = run.id;
    // Validations at step 0 and 5; the agent's own reward agrees with the key but twice: it paid bob's wrong 13, and not cy's right 11.
    const val = (t: typeof ann, step: number, answer: string, reward: number) => storedRollout(store, t, { answer, reward }, { mode: 'val', runId, step });
    await val(ann, 0, '37', 0);
    await val(ann, 5, '38', 1);
    await val(bob, 0, '12', 1);
    await val(bob, 5, '13', 1);
    await val(cy, 0, '11', 0);
    await val(cy, 5, '10', 0);
    bare = (await store.createTrainingRun({ agent: 'a.ts#agent', config: {}, totalSteps: 1 })).id;
    await store.close();
  });
  after(() => judge.close());

  it("scores the run's validation rollouts with its judge (one call per task) and reports the agreement within each task", async () => {
    const { code, out } = await runAgl(['judge', 'check', runId, '--json'], dataDir);
    assert.equal(code, 0, out);
    const r = JSON.parse(out.slice(out.indexOf('{'))) as {
      rollouts: { judge: number }[];
      calls: number;
      agreement: Record<string, number>;
      disagreements: { better: { taskId: string; explanation: string } }[];
      selfAgreement: { r: number; low: number; weight: number; pairs: number; df: number; noise: number; meanAbsDiff: number };
    };
    assert.equal(r.rollouts.length, 6);
    assert.equal(r.calls, 6, 'group mode: one call per task, its validations together, and each task shown again by a call of its own');
    // Within a task: ann's pair agrees; bob's and cy's own rewards are equal (no pair). Nothing the agent ranked apart is reversed.
    assert.deepEqual(r.agreement, { pairs: 1, pairwiseAccuracy: 1, spearman: null, spearmanGroups: 0 });
    assert.deepEqual(r.disagreements, []);
    assert.equal(judge.requests.length, 6);
    assert.deepEqual(
      judge.requests.map((q) => q.trajectories.length).sort(),
      [2, 2, 2, 3, 3, 3],
      "each group call shows a task's two rollouts, one of them twice; each second call shows them once",
    );
    // Three tasks of two, each shown again: 6 pairs, 3 degrees of freedom (a mean per task), all agreeing: reliability
    // 1, but 3 degrees of freedom bound it only at 1 - 1/3 less Fisher's margin, below 0: no weight from so few.
    const { signal, informativeness, ...self } = r.selfAgreement as typeof r.selfAgreement & { signal: number; informativeness: number };
    assert.ok(signal > 0 && informativeness === 1);
    assert.deepEqual(self, { r: 1, low: 0, weight: 0, pairs: 6, df: 3, noise: 0, meanAbsDiff: 0 });
  });

  it('single mode from the flags compares across tasks, and names the pairs it disagrees on with its reasons', async () => {
    const { code, out } = await runAgl(['judge', 'check', runId, '--judge-mode', 'single'], dataDir);
    assert.equal(code, 0, out);
    // Own rewards 0,1,1,1,0,0 against the key's 0,1,1,0,1,0 (ann 0 and 5, bob 0 and 5, cy 0 and 5): 9 pairs differ; the judge
    // orders 4 as the agent does, ties on 4 (half each) and reverses one (cy's 11 over bob's 13): 6 of 9.
    assert.match(out, /pairwise accuracy 0\.67 over 9 pairs whose own rewards differ/);
    assert.match(
      out,
      /self-agreement: 3 trajectories scored by two separate calls \(mean \|difference\| 0\.000 over every pair\); reliability 1\.00 .*weight 0\.00 \(training would leave its groups out: too few pairs/,
    );
    const store = new SqliteStore(join(dataDir, 'store.sqlite'));
    const rollouts = (await store.queryRollouts({ runId, mode: 'val' })).items;
    const spans = await Promise.all(rollouts.map((x) => store.querySpans({ rolloutId: x.id })));
    await store.close();
    assert.equal(spans.flat().filter((x) => x.name === SPAN.judge || x.attributes[AGL.rewardSource] === 'judge').length, 0, 'it writes nothing');
    assert.match(out, new RegExp(`Spearman ${spearman([0, 1, 1, 0, 1, 0], [0, 1, 1, 1, 0, 0])!.toFixed(2)}\\n`));
    assert.match(
      out,
      /where they disagree most \(the judge prefers the rollout the agent scored lower\):\n {2}task cy \S+ \(agent 0\.00, judge 1\.00: "the answer 11 is the expected 11"\) over task bob \S+ \(agent 1\.00, judge 0\.00: "the answer 13 is not 12"\)/,
    );
  });

  it('one validation step in group mode has nothing to compare: it says so and exits 1; a run without a judge asks for one', async () => {
    const one = await runAgl(['judge', 'check', runId, '--step', '0'], dataDir);
    assert.equal(one.code, 1, one.out);
    assert.match(one.out, /no task has two rollouts with different rewards of their own: in group mode.*--judge-mode single/);
    const none = await runAgl(['judge', 'check', bare], dataDir);
    assert.equal(none.code, 1);
    assert.match(none.out, /the run has no judge: section; name one with --config train\.yaml \(its judge:\) or --judge-url, --judge-model and --judge-rubric/);
    const rubricFile = join(dataDir, 'rubric.md');
    writeFileSync(rubricFile, rubric);
    const flags = await runAgl(['judge', 'check', bare, '--judge-url', judge.url, '--judge-model', 'm', '--judge-rubric', rubricFile], dataDir);
    assert.equal(flags.code, 1, 'a run without validation rollouts has nothing to compare');
    assert.match(flags.out, /has no succeeded validation rollouts here/);
    const unknown = await runAgl(['judge', 'check', 'run-nope'], dataDir);
    assert.equal(unknown.code, 1);
    assert.match(unknown.out, /no run 'run-nope' in this store/);
  });
});
