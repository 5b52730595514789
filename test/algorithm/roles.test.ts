/**
 * One policy per agent role (`policies:` in train.yaml), through the real CLI, gateway, runner and store:
 *   - the config's errors before anything starts (a shared role that is not a role, sharing a sharer, agentMatch
 *     leaving a role out), and at start (a role that makes no LLM call, a policy folder that does not load);
 *   - the gateway serves each call from its role's policy (the SDK names the role in x-agl-agent) and records which
 *     policy and version served it; a call naming no role is refused, or served by the default when the config says so;
 *   - training: each policy learns from its own roles' calls (a shared policy from both roles', once each), with its
 *     own optimizer state and update count; roles not listed are served, untrained, by the default policy; the
 *     checkpoint holds every policy, `--resume` restores them, `agl export` names each transition's policy;
 *   - the failure modes others hit: an update never touches another policy's weights or Adam moments, and a swapped
 *     assignment of trained policies to roles is refused at load.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { OpenPolicySet, trainedPolicy } from '../../daemon/algorithm/open-policy-set.js';
import { policySet } from '../../protocol/policy-set.js';
import { configOverrides, TRAIN_OPTIONS, trainCommandLine } from '../../protocol/train-options.js';
import { createPolicy, loadPolicy } from '../../daemon/model/policy.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { routeByRole } from '../../daemon/server/gateway-roles.js';
import { LlmResource } from '../../protocol/store.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { runAgl, saveTinyPolicy, writeToyTasks } from './cli-helpers.js';
import { startDaemon } from '../helpers/daemon.js';
import { attemptBaseUrl } from '../../protocol/ids.js';
import { serveCheckpoint } from '../../samples/harness/serve-checkpoint.js';
import { AglClient } from '../../client/client.js';
import type { PolicyInfo } from '../../protocol/api.js';
import { groupPage } from '../../daemon/store/views.js';
import { STD_EPS } from '../../protocol/grpo-advantage.js';
import { formulaText } from '../../webview/trajectory/group-view.js';

const AGENT = 'test/algorithm/fixtures/roles-agent.ts#rolesAgent';

function maxDiff(a: string, b: string): number {
  const x = readSafetensors(a).tensors,
    y = readSafetensors(b).tensors;
  let w = 0;
  for (const [k, t] of x) {
    const u = y.get(k)!.data as Float32Array;
    (t.data as Float32Array).forEach((v, i) => {
      w = Math.max(w, Math.abs(v - u[i]!));
    });
  }
  return w;
}

describe('policies: the config', () => {
  it('names what is wrong before anything starts', () => {
    assert.throws(
      () => parseTrainConfig({ policies: { rewriter: { shared: 'writr' } } }),
      /policies\.rewriter\.shared: names 'writr', which is not a role under policies/,
    );
    assert.throws(
      () => parseTrainConfig({ policies: { writer: {}, checker: { shared: 'writer' }, rewriter: { shared: 'checker' } } }),
      /policies\.rewriter\.shared: names 'checker', which itself shares 'writer'/,
    );
    assert.throws(
      () => parseTrainConfig({ training: { agentMatch: '^writer$' }, policies: { writer: {}, checker: {} } }),
      /training\.agentMatch \^writer\$ leaves role 'checker' out/,
    );
    assert.throws(() => parseTrainConfig({ policies: { writer: { lr: 1 } } }), /policies\.writer/);
    const ok = parseTrainConfig({ policies: { writer: { learningRate: 3e-4, grpo: { epsilonHigh: 0.28 } }, rewriter: { shared: 'writer' } } });
    assert.equal(ok.unassignedCalls, 'refuse');
  });
});

describe('policies: agl train --policy', () => {
  it('builds the policies section from the flags, errors naming the flag, and the command line the extension runs', () => {
    const flags = { policy: ['writer', 'rewriter=shared:writer', 'checker=ckpt/checker'], 'unassigned-calls': 'default' };
    const over = configOverrides(TRAIN_OPTIONS, flags);
    assert.deepEqual(over, { policies: { writer: {}, rewriter: { shared: 'writer' }, checker: { init: 'ckpt/checker' } }, unassignedCalls: 'default' });
    const c = parseTrainConfig(over);
    assert.deepEqual(Object.keys(c.policies), ['writer', 'rewriter', 'checker']);
    assert.equal(c.unassignedCalls, 'default');
    assert.throws(() => configOverrides(TRAIN_OPTIONS, { policy: ['writer='] }), /--policy takes ROLE, ROLE=DIR or ROLE=shared:OTHER.*got 'writer='/);
    assert.throws(() => configOverrides(TRAIN_OPTIONS, { policy: ['writer', 'writer=x'] }), /--policy names role 'writer' twice/);
    assert.throws(() => parseTrainConfig(configOverrides(TRAIN_OPTIONS, { policy: ['rewriter=shared:writr'] })), /names 'writr', which is not a role/);
    assert.deepEqual(trainCommandLine('a.ts#x', { policy: ['writer', 'rewriter=shared:writer'], quiet: true }), [
      'train',
      'a.ts#x',
      '--policy',
      'writer',
      '--policy',
      'rewriter=shared:writer',
      '--quiet',
    ]);
  });
});

describe('policies: the gateway routes by role', () => {
  it('serves a listed role with its model, another role with the default, and refuses a call naming no role', () => {
    const r = LlmResource.parse({
      type: 'llm',
      endpoint: 'x',
      model: 'default-model',
      roleModels: { writer: 'writer', rewriter: 'writer', checker: 'checker' },
    });
    assert.equal(routeByRole(r, 'rewriter').resource.model, 'writer');
    assert.equal(routeByRole(r, 'checker').resource.model, 'checker');
    assert.equal(routeByRole(r, 'narrator').resource.model, 'default-model');
    assert.throws(() => routeByRole(r, undefined), /names no agent role \(header x-agl-agent\).*unassignedCalls: default/);
    assert.equal(routeByRole({ ...r, unassignedRole: 'default' }, undefined).resource.model, 'default-model');
    assert.equal(routeByRole({ ...r, roleModels: undefined }, undefined).resource.model, 'default-model', 'without role policies nothing changes');
  });
});

describe('policies: the gateway serves and records by role', () => {
  it("serves a call from its role's policy with the policy and version on its span; refuses one naming no role", { timeout: 120_000 }, async () => {
    const mk = (name: string) => createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed: 2, backend: 'cpu', name });
    const [fallback, writer] = [await mk('base'), await mk('writer')];
    const daemon = await startDaemon({ getPolicy: (name) => (name === 'writer' ? writer : fallback) });
    try {
      await daemon.client.addResources({
        resources: {
          llm: {
            type: 'llm',
            endpoint: `${daemon.url}/v1`,
            model: 'base',
            backend: 'local',
            roleModels: { writer: 'writer' },
            samplingParams: { maxTokens: 4 },
          },
        },
      });
      const claim = await daemon.client.startRollout({ input: {} }, 'test');
      const url = `${attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id)}/completions`;
      const post = (headers: Record<string, string>) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'base', prompt: 'hi' }) });
      const refused = await post({});
      assert.equal(refused.status, 400);
      const body = (await refused.json()) as { error: { code: string; param: string; message: string } };
      assert.deepEqual([body.error.code, body.error.param], ['role_missing', 'x-agl-agent']);
      assert.equal((await post({ 'x-agl-agent': 'writer' })).status, 200);
      assert.equal((await post({ 'x-agl-agent': 'narrator' })).status, 200);
      const spans = (await daemon.client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall);
      const served = spans.filter((s) => s.attributes[AGL.completionTokenIds]);
      assert.deepEqual(
        served.map((s) => [s.attributes[AGL.agentName], s.attributes[AGL.policyName]]),
        [
          ['writer', 'writer'],
          ['narrator', 'base'],
        ],
      );
      assert.ok(!spans.some((s) => s.attributes[AGL.agentName] === undefined && s.attributes[AGL.completionTokenIds]), 'the refused call was not served');
    } finally {
      await daemon.close();
      fallback.dispose();
      writer.dispose();
    }
  });
});

describe('policies: agl train', () => {
  let dir: string;
  let model: string;
  let tasks: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-roles-'));
    model = await saveTinyPolicy(dir, 5);
    tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 4);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const config = (name: string, policies: string, steps = 2, extra = '') => {
    const f = join(dir, `${name}.yaml`);
    writeFileSync(
      f,
      `model:\n  maxTokens: 6\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: ${steps}\n  valEvery: 0\n  learningRate: 0.02\n  seed: 5\nruntime:\n  workers: 2\n${extra}${policies ? `policies:\n${policies}` : ''}`,
    );
    return f;
  };
  const train = (cfg: string, data: string, ckpt: string, extra: string[] = [], agent = AGENT) =>
    runAgl(['train', agent, '--train', tasks, '--val', tasks, '--model', model, '--config', cfg, '--checkpoint-dir', ckpt, '--quiet', ...extra], data);

  it(
    'trains each policy on its own roles (a shared one on both, once), serves the rest with the untouched default, records and exports the policy',
    { timeout: 600_000 },
    async () => {
      const data = join(dir, 'd1'),
        ckpt = join(dir, 'c1');
      // The policies from the flags (as --policy writes them into the config's policies: section).
      const { code, out } = await train(config('shared', ''), data, ckpt, ['--policy', 'writer', '--policy', 'checker=shared:writer']);
      assert.equal(code, 0, out);
      assert.match(out, /one policy per role: writer \(writer, checker\); other roles: default \(tiny\), untrained/);
      const state = JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8'));
      assert.deepEqual(state.rolePolicies, { writer: { dir: 'policy-2/writer', roles: ['writer', 'checker'] } });
      const rec = JSON.parse(readFileSync(join(ckpt, 'policy-2', 'writer', 'agl-policy.json'), 'utf8'));
      assert.deepEqual([rec.policy, rec.roles, rec.updates], ['writer', ['writer', 'checker'], state.trainer.policies.writer.updates]);
      assert.ok(rec.updates >= 1, 'the writer policy was updated');
      assert.ok(!existsSync(join(ckpt, 'policy-2', 'model.safetensors')), 'the untrained default is not saved');
      assert.ok(maxDiff(join(model, 'model.safetensors'), join(ckpt, 'policy-2', 'writer', 'model.safetensors')) > 1e-4, 'the writer policy moved');

      const store = new SqliteStore(join(data, 'store.sqlite'));
      try {
        const [run] = await store.listTrainingRuns();
        const metrics = await store.queryMetrics(run.id);
        const at = (name: string, step: number) => metrics.find((m) => m.name === name && m.step === step)?.value;
        for (const step of [1, 2]) {
          const ts = await store.queryTransitions({ runId: run.id, step });
          const byRole = (r: string) => ts.filter((t) => t.agentName === r).length;
          assert.equal(byRole('narrator'), 0, 'the untrained role is not trained on');
          assert.ok(byRole('writer') > 0 && byRole('checker') > 0);
          assert.equal(at('policy/writer/transitions', step), byRole('writer') + byRole('checker'), "the shared policy got both roles' calls, once each");
        }
        // Each call says which policy served it, at which version.
        const rollouts = (await store.queryRollouts({ limit: 100, mode: 'train' })).items;
        const calls = (await Promise.all(rollouts.map((r) => store.querySpans({ rolloutId: r.id, attemptId: 'latest', name: SPAN.llmCall })))).flat();
        const policyOf = (role: string) => new Set(calls.filter((s) => s.attributes[AGL.agentName] === role).map((s) => s.attributes[AGL.policyName]));
        assert.deepEqual([...policyOf('writer')], ['writer']);
        assert.deepEqual([...policyOf('checker')], ['writer']);
        // The untrained default policy is named as everywhere else (protocol/policy-set.ts DEFAULT_POLICY), as agl export names it.
        assert.deepEqual([...policyOf('narrator')], ['default']);
        const versions = new Set(calls.filter((s) => s.attributes[AGL.policyName] === 'writer').map((s) => s.attributes[AGL.policyVersion]));
        assert.ok(versions.has(0) && versions.size >= 2, `writer's calls carry its version as it trained: ${[...versions]}`);
      } finally {
        await store.close();
      }
      const exported = await runAgl(['export', '--format', 'jsonl'], data);
      assert.equal(exported.code, 0, exported.out);
      const lines = exported.out
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { agentName: string; policy: string; policyVersion: number | null });
      assert.ok(lines.length > 0);
      assert.ok(
        lines.every((l) => l.policy === 'writer' && typeof l.policyVersion === 'number'),
        'every exported transition names its policy',
      );
    },
  );

  it('two policies keep their own optimizer state; --resume restores both; a swapped assignment is refused at load', { timeout: 600_000 }, async () => {
    const data = join(dir, 'd2'),
      ckpt = join(dir, 'c2');
    const cfg = config('two', '  writer: {}\n  checker:\n    learningRate: 0.01\n', 2);
    const first = await train(cfg, data, ckpt);
    assert.equal(first.code, 0, first.out);
    const state = JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8'));
    const [w, c] = [join(ckpt, 'policy-2', 'writer'), join(ckpt, 'policy-2', 'checker')];
    assert.ok(maxDiff(join(w, 'model.safetensors'), join(c, 'model.safetensors')) > 1e-4, 'the two policies diverged from one start');
    for (const [name, folder] of [
      ['writer', w],
      ['checker', c],
    ] as const) {
      const meta = readSafetensors(join(folder, 'optimizer.safetensors')).metadata;
      assert.equal(Number(meta.step), state.trainer.policies[name].updates, `${name}'s Adam step count is its own updates`);
    }
    const store = new SqliteStore(join(data, 'store.sqlite'));
    try {
      const [run] = await store.listTrainingRuns();
      const metrics = await store.queryMetrics(run!.id);
      const rates = (p: string) => [...new Set(metrics.filter((m) => m.name === `policy/${p}/lr`).map((m) => m.value))];
      assert.deepEqual([rates('writer'), rates('checker')], [[0.02], [0.01]], "each policy's own learning rate, sent with each of its updates");
    } finally {
      await store.close();
    }

    // Resume: the run's policies come back from the checkpoint (with the steps the flags add).
    const resumed = await runAgl(['train', AGENT, '--train', tasks, '--val', tasks, '--resume', ckpt, '--quiet'], data);
    assert.equal(resumed.code, 0, resumed.out);
    assert.match(resumed.out, /resumed at step 2/);
    assert.match(resumed.out, /one policy per role: writer \(writer\); checker \(checker\)/);

    // Swapped: the writer role given the checker's trained folder.
    const swapped = await train(config('swapped', `  writer:\n    init: ${c}\n  checker:\n    init: ${w}\n`), join(dir, 'd3'), join(dir, 'c3'));
    assert.equal(swapped.code, 1);
    assert.match(swapped.out, /policies\.writer\.init: .* holds policy 'checker' \(trained on checker\), not 'writer' \(writer\): a swapped assignment/);
  });

  it(
    'agl serve --model <checkpoint> serves each role from its policy as the run did; a swapped or missing folder is refused',
    { timeout: 300_000 },
    async () => {
      // The checkpoint of the previous case (writer and checker each own, narrator on the default, resumed to step 4).
      const ckpt = join(dir, 'c2');
      const state = JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8'));
      const folder = join(ckpt, state.policyDir);
      const record = JSON.parse(readFileSync(join(folder, 'agl-policies.json'), 'utf8'));
      assert.equal(record.default, model, "the default policy is the run's starting model");
      assert.equal(record.unassignedCalls, 'refuse');
      assert.deepEqual(Object.keys(record.policies).sort(), ['checker', 'writer']);
      assert.equal(record.policies.writer.updates, state.trainer.policies.writer.updates);
      assert.ok(existsSync(join(ckpt, 'best', 'agl-policies.json')) || !existsSync(join(ckpt, 'best')), 'best/ is servable too');

      const prompt = 'p1:';
      const served = await serveCheckpoint(ckpt, { temperature: 0, maxTokens: 6 });
      const single = await serveCheckpoint(join(folder, 'writer'), { temperature: 0, maxTokens: 6 });
      try {
        const url = served.llm.baseUrl.replace(/\/v1$/, '');
        const client = new AglClient({ url, token: served.llm.apiKey });
        const info = (await (await fetch(`${url}/v1/agl/policy`, { headers: { authorization: `Bearer ${served.llm.apiKey}` } })).json()) as PolicyInfo;
        assert.equal(info.default, model);
        assert.deepEqual(info.policies?.map((p) => [p.name, p.roles, p.updates]).sort(), [
          ['checker', ['checker'], record.policies.checker.updates],
          ['writer', ['writer'], record.policies.writer.updates],
        ]);
        const claim = await client.startRollout({ input: {} }, 'test');
        const base = attemptBaseUrl(`${url}/v1`, claim.rollout.id, claim.attempt.id);
        const complete = async (llmBase: string, headers: Record<string, string>) => {
          const res = await fetch(`${llmBase}/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${served.llm.apiKey}`, ...headers },
            body: JSON.stringify({ model: 'checkpoint', prompt, max_tokens: 6, temperature: 0 }),
          });
          return { status: res.status, body: (await res.json()) as { choices?: { text: string }[]; error?: { code: string } } };
        };
        const refused = await complete(base, {});
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error?.code, 'role_missing');
        const texts: Record<string, string> = {};
        for (const role of ['writer', 'checker', 'narrator']) {
          const r = await complete(base, { 'x-agl-agent': role });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          texts[role] = r.body.choices![0]!.text;
        }
        // The writer role gets the writer folder's weights: the same greedy text as that folder served alone.
        const alone = await fetch(`${single.llm.baseUrl}/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${single.llm.apiKey}` },
          body: JSON.stringify({ model: 'checkpoint', prompt, max_tokens: 6, temperature: 0 }),
        });
        assert.equal(((await alone.json()) as { choices: { text: string }[] }).choices[0]!.text, texts.writer);
        const spans = (await client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall && s.attributes[AGL.completionTokenIds]);
        assert.deepEqual(
          spans.map((s) => [s.attributes[AGL.agentName], s.attributes[AGL.policyName], s.attributes[AGL.policyVersion] ?? null]),
          [
            ['writer', 'writer', record.policies.writer.updates],
            ['checker', 'checker', record.policies.checker.updates],
            ['narrator', 'checkpoint', null],
          ],
        );
      } finally {
        await served.stop();
        await single.stop();
      }

      // A swapped folder (the writer's weights where the checker's should be) and a default that moved: exit 2, named.
      const broken = join(dir, 'broken');
      cpSync(folder, broken, { recursive: true });
      rmSync(join(broken, 'checker'), { recursive: true });
      cpSync(join(folder, 'writer'), join(broken, 'checker'), { recursive: true });
      const swapped = await runAgl(['serve', '--model', broken, '--port', '0'], join(dir, 'd6'));
      assert.equal(swapped.code, 2, swapped.out);
      assert.match(swapped.out, /policy checker: .*broken.checker holds policy 'writer' \(trained on writer\), not 'checker'/);
      const moved = JSON.parse(readFileSync(join(folder, 'agl-policies.json'), 'utf8'));
      const elsewhere = join(dir, 'moved');
      cpSync(folder, elsewhere, { recursive: true });
      writeFileSync(join(elsewhere, 'agl-policies.json'), JSON.stringify({ ...moved, default: join(dir, 'gone') }));
      const gone = await runAgl(['serve', '--model', elsewhere, '--port', '0'], join(dir, 'd7'));
      assert.equal(gone.code, 2, gone.out);
      assert.match(gone.out, /the default policy .*gone \(the run's starting model.*\) holds no model: give its folder with --default-model DIR/);
    },
  );

  it(
    'training.groupBy task-role: each call is compared with its own role of the task; the group view gives the numbers per role',
    { timeout: 300_000 },
    async () => {
      const data = join(dir, 'd8');
      const cfg = join(dir, 'groupby.yaml');
      writeFileSync(
        cfg,
        `model:\n  maxTokens: 6\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 2\n  valEvery: 0\n  learningRate: 0.02\n  seed: 5\n  groupBy: task-role\n  agentMatch: ^(writer|checker)$\nruntime:\n  workers: 2\n`,
      );
      const run = await train(cfg, data, join(dir, 'c8'));
      assert.equal(run.code, 0, run.out);
      const store = new SqliteStore(join(data, 'store.sqlite'));
      try {
        const [rec] = await store.listTrainingRuns();
        let splitMatters = 0;
        for (const step of [1, 2]) {
          const ts = await store.queryTransitions({ runId: rec.id, step });
          const byKey = new Map<string, typeof ts>();
          for (const t of ts) byKey.set(`${t.groupId} ${t.agentName}`, [...(byKey.get(`${t.groupId} ${t.agentName}`) ?? []), t]);
          const eps = STD_EPS;
          const stats = (xs: number[]) => {
            const m = xs.reduce((a, x) => a + x, 0) / xs.length;
            return { m, s: Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / Math.max(1, xs.length - 1)) };
          };
          for (const calls of byKey.values()) {
            const { m, s } = stats(calls.map((t) => t.credit));
            for (const t of calls)
              assert.ok(Math.abs(t.advantage - (t.credit - m) / (s + eps)) < 1e-4, `advantage against its role's calls: ${JSON.stringify(t)}`);
            const task = ts.filter((u) => u.groupId === calls[0]!.groupId);
            const whole = stats(task.map((u) => u.credit));
            if (calls.some((t) => Math.abs(t.advantage - (t.credit - whole.m) / (whole.s + eps)) > 1e-3)) splitMatters++;
          }
        }
        assert.ok(splitMatters > 0, 'some calls got another advantage than against the whole task');
        const page = await groupPage(store, { runId: rec.id, step: 1 });
        const spread = page.groups.find((g) => g.advantage && !g.advantage.zeroVariance);
        assert.ok(spread, 'a group with reward spread');
        assert.deepEqual(spread.advantage!.byRole!.map((r) => r.role).sort(), ['checker', 'writer']);
        assert.equal(spread.advantage!.matchesStored, true);
        assert.match(formulaText(spread.advantage!, spread).full, /grouped by task and role .*\n {2}(writer|checker): 4 calls, mean/);
      } finally {
        await store.close();
      }
      // A one-policy run's checkpoint folder serves its last step's policy.
      const served = await serveCheckpoint(join(dir, 'c8'), { temperature: 0, maxTokens: 4 });
      try {
        const res = await fetch(`${served.llm.baseUrl}/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${served.llm.apiKey}` },
          body: JSON.stringify({ model: 'checkpoint', prompt: 'wp1:', max_tokens: 4 }),
        });
        assert.equal(res.status, 200, await res.text());
      } finally {
        await served.stop();
      }
    },
  );

  it('a role that makes no LLM call, and a policy folder that does not load, stop the run naming the role and the file', { timeout: 600_000 }, async () => {
    const none = await train(config('typo', '  writr: {}\n'), join(dir, 'd4'), join(dir, 'c4'));
    assert.equal(none.code, 1);
    // Warned after the validation, stopped once the first training steps brought no call from it either.
    assert.match(
      none.out,
      /policies: role 'writr' made no LLM call in the 4 validation rollouts before training; training stops if it makes none in the first 2 steps/,
    );
    assert.match(
      none.out,
      /policies: role 'writr' made no LLM call in the 4 validation rollouts before training nor in the 16 rollouts of the first 2 training steps, so its policy would never train\. The agent's calls came from 'writer', 'checker', 'narrator'/,
    );
    // A role whose every call fails: said so, not "no call".
    const failing = await train(
      config('failing', '  writer: {}\n  critic: {}\n'),
      join(dir, 'd9'),
      join(dir, 'c9'),
      [],
      'test/algorithm/fixtures/roles-agent.ts#failingRoleAgent',
    );
    assert.equal(failing.code, 1, failing.out);
    assert.match(
      failing.out,
      /policies: role 'critic' made no LLM call that succeeded in the 4 validation rollouts before training nor in the 16 rollouts of the first 2 training steps, so its policy would never train\. 'critic' made \d+ calls, and every one failed/,
    );
    const missing = await train(config('missing', `  writer:\n    init: ${join(dir, 'no-such-folder')}\n`), join(dir, 'd5'), join(dir, 'c5'));
    assert.equal(missing.code, 1);
    assert.match(missing.out, /policies\.writer\.init: cannot open .*no-such-folder for role writer/);
  });
});

describe('policies: an update never touches another policy', () => {
  it(
    "the default policy's weights and Adam moments are the same bytes after training; each role policy counts its own updates",
    { timeout: 600_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'agl-roles-trainer-'));
      const store = new SqliteStore(join(dir, 'store.sqlite'));
      const mk = (seed: number, name: string) => createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed, backend: 'cpu', name });
      const fallback = await mk(1, 'default');
      const writer = await mk(1, 'writer');
      const checker = await mk(1, 'checker');
      await fallback.save(join(dir, 'default-before'));
      const config = parseTrainConfig({
        model: { temperature: 1, maxTokens: 6 },
        training: { batchSize: 2, groupSize: 4, maxSteps: 2, valEvery: 0, seed: 3, learningRate: 2e-2 },
        runtime: { workers: 2 },
        policies: { writer: {}, checker: {} },
      });
      const [writerPlan, checkerPlan] = policySet(config).policies;
      const policies = new OpenPolicySet(policySet(config), [trainedPolicy(writerPlan!, writer), trainedPolicy(checkerPlan!, checker)], fallback);
      const host = await startTrainingHost({
        store,
        policies,
        token: 'test-token-abcdef0123456789',
        dataDir: dir,
        workers: 2,
        agent: AGENT,
      });
      try {
        const tasks = Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, input: { prompt: `p${i}:` } }));
        const run = await store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 2 });
        const trainer = new Trainer(
          { store, policies, endpoint: host.endpoint, agent: AGENT, config, train: tasks, val: tasks, checkpoint: async () => {} },
          newTrainerState(run),
        );
        const state = await trainer.run();
        await fallback.save(join(dir, 'default-after'));
        for (const f of ['model.safetensors', 'optimizer.safetensors']) {
          assert.ok(
            readFileSync(join(dir, 'default-before', f)).equals(readFileSync(join(dir, 'default-after', f))),
            `the default policy's ${f} is byte for byte unchanged`,
          );
        }
        for (const p of [writer, checker]) {
          assert.equal(p.optimizer.step, state.policies![p.name]!.updates, `${p.name}: its optimizer stepped exactly on its own updates`);
          assert.ok(p.optimizer.step >= 1);
        }
        await writer.save(join(dir, 'writer'));
        await checker.save(join(dir, 'checker'));
        assert.ok(
          maxDiff(join(dir, 'writer', 'model.safetensors'), join(dir, 'checker', 'model.safetensors')) > 1e-4,
          'same start, own updates: they diverged',
        );
        const reloaded = await loadPolicy(join(dir, 'writer'));
        assert.equal(reloaded.optimizer.step, writer.optimizer.step);
        reloaded.dispose();
      } finally {
        await host.close();
        await store.close();
        for (const p of [fallback, writer, checker]) p.dispose();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
