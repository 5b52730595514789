/**
 * The policy set (protocol/policy-set.ts, daemon/algorithm/open-policy-set.ts) as `agl train` runs it: each policy's
 * own GRPO settings reach the engine inside each of its train-step requests, with the learning rate of its schedule.
 * A role naming its own `grpo.variant` trains with that variant's loss while the other roles keep the run's.
 * The requests are observed where they reach the real TF.js engine (a recorder around its trainStep that calls it).
 * Before the policy set, the DAPO role trained with GRPO's clip range and the GSPO role with token ratios: its
 * `grpo` was re-resolved over the run's already-resolved settings, so only the variant's name changed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { trainAgent } from '../../daemon/commands/train.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { METRICS } from '../../protocol/metrics.js';
import { isOnePolicy, policyRouting, policySet, roleOwners } from '../../protocol/policy-set.js';
import { TfPolicyModel } from '../../daemon/model/policy.js';
import type { TrainLoss } from '../../daemon/model/policy-contract.js';
import { saveTinyPolicy, writeToyTasks } from './cli-helpers.js';

const AGENT = 'test/algorithm/fixtures/roles-agent.ts#rolesAgent';

/** What one train-step request carried: the policy it updated, its loss without the samples, and its own settings. */
interface SeenRequest {
  policy: string;
  loss: Omit<Extract<TrainLoss, { kind: 'grpo' }>, 'samples'>;
  settings: unknown;
}

function writeConfig(file: string, yaml: string): string {
  writeFileSync(file, yaml);
  return file;
}

/** Records every trainStep request the TF.js engine gets while `fn` runs (the real trainStep runs each one). */
async function recordingTrainSteps(fn: () => Promise<unknown>): Promise<SeenRequest[]> {
  const seen: SeenRequest[] = [];
  const proto = TfPolicyModel.prototype as unknown as { trainStep: (this: TfPolicyModel, ...args: unknown[]) => Promise<unknown> };
  const real = proto.trainStep;
  proto.trainStep = function (this: TfPolicyModel, ...args: unknown[]) {
    const loss = args[1] as TrainLoss;
    if (loss.kind === 'grpo') {
      const { samples: _, ...rest } = loss;
      seen.push({ policy: this.name, loss: rest, settings: args[2] });
    }
    return real.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.trainStep = real;
  }
  return seen;
}

describe('policy set: resolved once from the config', () => {
  it("a run without policies: is a set of one policy serving every call, with the run's settings", () => {
    const set = policySet(parseTrainConfig({ model: { name: 'builtin:5m' }, training: { learningRate: 3e-3, grpo: { variant: 'gspo' } } }));
    assert.ok(isOnePolicy(set));
    assert.deepEqual(
      set.policies.map((p) => [p.name, p.roles, p.init, p.learningRate, p.grpo.variant, p.grpo.importanceSampling]),
      [['policy', null, 'builtin:5m', 3e-3, 'gspo', 'sequence']],
    );
    assert.deepEqual([set.owners, set.base, set.lora], [{}, 'builtin:5m', null]);
    assert.equal(policyRouting(set.policies, set.unassignedCalls), null, 'one policy: nothing to route');
  });

  it("with policies: each role to its owner; its own start, learning rate and GRPO settings over the run's", () => {
    const config = parseTrainConfig({
      model: { name: 'base-model', init: 'warm' },
      training: { learningRate: 1e-4, grpo: { beta: 0.04, epsilon: 0.1 } },
      policies: {
        writer: { init: 'ckpt/writer', learningRate: 5e-5, grpo: { variant: 'dapo' } },
        rewriter: { shared: 'writer' },
        checker: { grpo: { epsilonHigh: 0.5 } },
      },
      unassignedCalls: 'default',
    });
    const set = policySet(config);
    assert.deepEqual(set.owners, { writer: 'writer', rewriter: 'writer', checker: 'checker' });
    assert.deepEqual(roleOwners(config.policies), set.owners, 'the views read the same map from the recorded config');
    const [writer, checker] = set.policies;
    assert.deepEqual([writer!.name, writer!.roles, writer!.init, writer!.learningRate], ['writer', ['writer', 'rewriter'], 'ckpt/writer', 5e-5]);
    assert.deepEqual([checker!.name, checker!.roles, checker!.init, checker!.learningRate], ['checker', ['checker'], 'warm', 1e-4]);
    // The writer's variant replaces the run's; what the run set apart from its variant (epsilon, beta) carries over.
    assert.deepEqual(
      [writer!.grpo.variant, writer!.grpo.epsilon, writer!.grpo.epsilonHigh, writer!.grpo.beta, writer!.grpo.dynamicSampling],
      ['dapo', 0.1, 0.28, 0.04, true],
    );
    assert.deepEqual([checker!.grpo.variant, checker!.grpo.epsilon, checker!.grpo.epsilonHigh, checker!.grpo.beta], ['grpo', 0.1, 0.5, 0.04]);
    assert.equal(set.base, 'warm', "the default policy is the run's starting model");
    assert.deepEqual(policyRouting(set.policies, set.unassignedCalls), {
      roleModels: { writer: 'writer', rewriter: 'writer', checker: 'checker' },
      unassignedRole: 'default',
    });
  });

  it("LoRA: the run's one policy, or each role's, is an adapter on the run's model (fresh unless init names an adapter)", () => {
    const one = policySet(parseTrainConfig({ model: { name: 'qwen' }, engine: { kind: 'torch', lora: { rank: 4 } } }));
    assert.deepEqual([one.policies[0]!.init, one.base, one.lora?.rank], [null, 'qwen', 4]);
    const roles = policySet(parseTrainConfig({ engine: { kind: 'torch', lora: {} }, policies: { writer: {}, checker: { init: 'adapters/checker' } } }));
    assert.deepEqual(
      roles.policies.map((p) => p.init),
      [null, 'adapters/checker'],
    );
  });
});

describe('policy set: settings travel with each update', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'agl-policy-set-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    "a role's own grpo.variant changes its loss (DAPO's clip-higher, GSPO's sequence ratio); the other role keeps the run's GRPO",
    { timeout: 600_000 },
    async () => {
      const model = await saveTinyPolicy(dir, 5);
      const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 4);
      const cfg = writeConfig(
        join(dir, 'variants.yaml'),
        'model:\n  maxTokens: 6\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 2\n  valEvery: 0\n  learningRate: 0.02\n  seed: 5\n' +
          'runtime:\n  workers: 2\npolicies:\n  writer:\n    learningRate: 0.03\n    grpo:\n      variant: dapo\n  checker: {}\n  narrator:\n    grpo:\n      variant: gspo\n',
      );
      const seen = await recordingTrainSteps(() =>
        trainAgent({
          agent: AGENT,
          train: tasks,
          val: tasks,
          model,
          config: cfg,
          'data-dir': join(dir, 'data'),
          'checkpoint-dir': join(dir, 'ckpt'),
          quiet: true,
        }),
      );
      const lossOf = (policy: string) => {
        const mine = seen.filter((s) => s.policy === policy);
        assert.ok(mine.length >= 1, `policy ${policy} was updated (requests seen: ${seen.map((s) => s.policy).join(', ')})`);
        assert.equal(new Set(mine.map((s) => JSON.stringify(s.loss))).size, 1, `${policy}: one loss every step`);
        return mine[0]!.loss;
      };
      // DAPO (Yu et al. 2025): clip-higher 0.2 / 0.28, token-level aggregation, a ratio per token.
      // Every policy's ratio is against its update's own log-probs, the sampler's in a truncated importance weight.
      // The loss record names GRPO's settings as their one declaration does (protocol/grpo-settings.ts).
      const token = {
        kind: 'grpo',
        epsilon: 0.2,
        sequenceEpsilon: 3e-4,
        sequenceEpsilonHigh: 4e-4,
        beta: 0,
        lossAggregation: 'token-mean',
        lossNormTokens: 6,
        importanceSampling: 'token',
        ratioBase: 'update',
        tisCap: 3,
      };
      assert.deepEqual(lossOf('writer'), { ...token, epsilonHigh: 0.28 });
      // The run's training.grpo (this project's GRPO: 0.2 / 0.3, token-mean).
      assert.deepEqual(lossOf('checker'), { ...token, epsilonHigh: 0.3 });
      // GSPO (Zheng et al. 2025): one ratio per sequence in its tight clip range, sequence-mean loss.
      assert.deepEqual(lossOf('narrator'), { ...token, epsilonHigh: 0.3, lossAggregation: 'seq-mean', importanceSampling: 'sequence' });
      // Each request carries its policy's learning rate (no warm-up here: the configured one at every update).
      const settingsOf = (policy: string) => [...new Set(seen.filter((s) => s.policy === policy).map((s) => JSON.stringify(s.settings)))];
      assert.deepEqual(settingsOf('writer'), [JSON.stringify({ lr: 0.03 })]);
      assert.deepEqual(settingsOf('checker'), [JSON.stringify({ lr: 0.02 })]);
    },
  );

  it("a run's one policy: each request carries the warm-up schedule's learning rate of its step", { timeout: 600_000 }, async () => {
    const model = await saveTinyPolicy(dir, 5);
    const tasks = writeToyTasks(join(dir, 'one.jsonl'), 4);
    const data = join(dir, 'one-data');
    const seen = await recordingTrainSteps(() =>
      trainAgent({
        agent: 'test/algorithm/fixtures/toy-agent.ts#toyAgent',
        train: tasks,
        val: tasks,
        model,
        lr: '0.02',
        'batch-size': '2',
        'group-size': '4',
        'max-steps': '2',
        'val-every': '0',
        workers: '2',
        config: writeConfig(join(dir, 'one.yaml'), 'model:\n  maxTokens: 6\ntraining:\n  warmupSteps: 2\n  seed: 5\n'),
        'data-dir': data,
        'checkpoint-dir': join(dir, 'one-ckpt'),
        quiet: true,
      }),
    );
    const store = new SqliteStore(join(data, 'store.sqlite'));
    try {
      const lr = (await store.queryMetrics((await store.listTrainingRuns())[0]!.id)).filter((m) => m.name === METRICS.lr).map((m) => m.value);
      assert.deepEqual(lr, [0.01, 0.02], 'half the rate at the first step, the configured one from the second');
    } finally {
      await store.close();
    }
    assert.ok(seen.length >= 1, 'the policy was updated');
    for (const s of seen)
      assert.ok([0.01, 0.02].includes((s.settings as { lr: number }).lr), `a request with the schedule's rate: ${JSON.stringify(s.settings)}`);
  });
});
