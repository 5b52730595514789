/**
 * What answered a rollout's calls (protocol/served-by.ts) and whether a runner is connected (protocol/runner-presence.ts):
 * the words the rollout view, the list and `agl rollout` / `agl rollouts list` use instead of the resources version and
 * a bare "queuing".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SERVED_MODELS, mergeServed, servedModelText, servedModels, servedNote, servedRowText, servedRowTip } from '../../protocol/served-by.js';
import { WORKER_SILENT_MS, connectedWorkers, statusWords } from '../../protocol/runner-presence.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Attributes, Worker } from '../../protocol/store.js';

const call = (attributes: Attributes) => ({ name: SPAN.llmCall, attributes: { [GENAI.operationName]: 'chat', ...attributes } });

describe('served-by: the model that answered, never the resources version', () => {
  it('names the local policy and its updates, counting calls per model', () => {
    const spans = [
      call({ [AGL.servedBy]: 'warmup', [AGL.servedUpdates]: null, [AGL.resourcesVersion]: 44 }),
      call({ [AGL.servedBy]: 'warmup', [AGL.resourcesVersion]: 44 }),
      { name: SPAN.reward, attributes: { [AGL.servedBy]: 'not a call' } },
    ];
    const models = servedModels(spans);
    assert.deepEqual(models, [{ name: 'warmup', updates: null, upstream: false, calls: 2 }]);
    assert.equal(servedModelText(models[0]!), 'warmup (untrained)');
    assert.match(
      servedNote(models)!,
      /^Ran on what the daemon serves: warmup \(untrained\), never trained; .*agl serve --model <checkpoint dir>.*Serve Checkpoint/,
    );
  });

  it('says a trained checkpoint answered, by its update count', () => {
    const models = servedModels([call({ [AGL.servedBy]: 'calc', [AGL.servedUpdates]: 34 })]);
    assert.equal(servedModelText(models[0]!), 'calc after 34 updates');
    assert.equal(servedNote(models), 'Ran on a trained checkpoint: calc after 34 updates.');
  });

  it('reads spans written before agl.served.*: the per-role policy, or the upstream model', () => {
    const role = servedModels([call({ [AGL.policyName]: 'writer', [AGL.policyVersion]: 3 })]);
    assert.deepEqual(role, [{ name: 'writer', updates: 3, upstream: false, calls: 1 }]);
    const up = servedModels([call({ [GENAI.system]: 'openai', [AGL.localPolicy]: false, [GENAI.responseModel]: 'gpt-4o-mini', [AGL.policyVersion]: 9 })]);
    assert.deepEqual(up, [{ name: 'gpt-4o-mini', updates: null, upstream: true, calls: 1 }]);
    assert.equal(servedNote(up), 'Ran on the upstream model gpt-4o-mini, not a local policy.');
    assert.deepEqual(servedModels([call({ [GENAI.system]: 'agl', [GENAI.requestModel]: 'x' })]), [], 'an old local span names nothing');
    assert.equal(servedNote([]), null);
  });
});

describe("served-by in the rollouts list's row: compact, with a tooltip saying what it is", () => {
  const calc34 = { name: 'calc', updates: 34, upstream: false };
  const warmup = { name: 'warmup', updates: null, upstream: false };
  const gpt = { name: 'gpt-4o-mini', updates: null, upstream: true };

  it('says one model with its updates, untrained, or upstream; several as mixed, one policy over versions as a range', () => {
    assert.equal(servedRowText([calc34]), 'calc · 34 updates');
    assert.equal(servedRowText([{ ...calc34, updates: 1 }]), 'calc · 1 update');
    assert.equal(servedRowText([warmup]), 'warmup · untrained');
    assert.equal(servedRowText([gpt]), 'gpt-4o-mini · upstream');
    assert.equal(servedRowText([calc34, gpt]), 'mixed: calc, gpt-4o-mini');
    assert.equal(servedRowText([calc34, { ...calc34, updates: 33 }]), 'calc · 33–34 updates');
    assert.equal(servedRowText([]), '—');
  });

  it('explains the column in its tooltip, then each model in words', () => {
    assert.equal(
      servedRowTip([calc34, gpt]),
      "Model: what answered the LLM calls of the rollout's latest attempt, as the gateway recorded it on each call " +
        '(a local policy and its training updates then, or the upstream model); not the resources version.\n' +
        '• calc after 34 updates\n• gpt-4o-mini (upstream)',
    );
    assert.match(servedRowTip([]), /\nNo call of it says/);
  });

  it('merges the models a batch names into those kept: new ones appended once each, null when none is new, at most 8', () => {
    assert.deepEqual(mergeServed([calc34], [calc34, gpt, gpt]), [calc34, gpt]);
    assert.equal(mergeServed([calc34, gpt], [gpt]), null, 'nothing to write');
    const many = Array.from({ length: 20 }, (_, i) => ({ name: `m${i}`, updates: i, upstream: false }));
    assert.equal(mergeServed([], many)!.length, MAX_SERVED_MODELS);
    assert.equal(mergeServed(many.slice(0, MAX_SERVED_MODELS), many), null);
    assert.equal(mergeServed([], [{ ...gpt, name: 'x'.repeat(1000) }])![0]!.name.length, 200, 'a name capped');
  });
});

describe('runner presence: "queuing: no runner is connected"', () => {
  const worker = (status: Worker['status'], lastHeartbeat: number): Worker => ({
    id: `w-${status}-${lastHeartbeat}`,
    status,
    lastHeartbeat,
    currentRolloutId: null,
    currentAttemptId: null,
    metadata: {},
  });

  it('counts workers that heartbeat recently and did not go offline', () => {
    const now = 1_000_000;
    const workers = [worker('idle', now - 500), worker('busy', now - WORKER_SILENT_MS - 1), worker('offline', now)];
    assert.deepEqual(
      connectedWorkers(workers, now).map((w) => w.id),
      [`w-idle-${now - 500}`],
    );
    assert.deepEqual(connectedWorkers(workers.slice(1), now), [], 'a silent worker and an offline one are gone');
  });

  it('says why a queued rollout waits, and nothing more for the others', () => {
    assert.equal(statusWords('queuing', false), 'queuing: no runner is connected');
    assert.equal(statusWords('requeuing', false), 'requeuing: no runner is connected');
    assert.equal(statusWords('queuing', true), 'queuing');
    assert.equal(statusWords('succeeded', false), 'succeeded');
  });
});
