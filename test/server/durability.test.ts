/**
 * `agl serve` stopped with SIGTERM or killed with SIGKILL while spans stream in: every span the daemon
 * acknowledged (HTTP 201) is in the store after a restart, with the sequence id it was acknowledged with.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SpanInput } from '../../protocol/store.js';
import { runCli, startDaemonProcess, tempDataDir, type DaemonProcess } from '../helpers/daemon-process.js';

/**
 * Streams span batches from 4 concurrent writers into the daemon until `stopWith` ends it, and returns
 * every span the daemon acknowledged (spanId -> sequenceId).
 */
async function streamUntilStopped(d: DaemonProcess, stopWith: NodeJS.Signals) {
  const { rollout, attempt } = await d.client.startRollout({ input: { task: 'stream' } }, 'w');
  const acked = new Map<string, number>();
  let batchesAcked = 0;
  let stopping = false;
  let failedWrites = 0;
  const writers = Array.from({ length: 4 }, async (_, w) => {
    for (let b = 0; !stopping || stopWith === 'SIGTERM'; b++) {
      const spans: SpanInput[] = Array.from({ length: 25 }, (_, i) => ({
        rolloutId: rollout.id,
        attemptId: attempt.id,
        spanId: `w${w}-b${b}-s${i}`,
        name: `round${i}`,
        startTime: Date.now(),
        attributes: { payload: 'x'.repeat(200), writer: w },
      }));
      try {
        const res = await d.client.addSpans(spans);
        for (const s of res) acked.set(s.spanId, s.sequenceId);
        batchesAcked++;
      } catch {
        failedWrites++;
        return; // the daemon is gone or closing: this batch was not acknowledged, nothing to expect
      }
    }
  });
  // Stop while the writers are mid-stream (after a fair number of acknowledged batches).
  while (batchesAcked < 40) await new Promise((r) => setTimeout(r, 5));
  stopping = true;
  const exit = await d.stop(stopWith);
  await Promise.all(writers);
  return { rollout, attempt, acked, exit, failedWrites };
}

async function assertAllAcknowledgedStored(d: DaemonProcess, rolloutId: string, acked: Map<string, number>) {
  const stored = await d.client.querySpans({ rolloutId, limit: 10_000 });
  const storedSeq = new Map(stored.map((s) => [s.spanId, s.sequenceId]));
  const lost = [...acked.keys()].filter((id) => !storedSeq.has(id));
  assert.deepEqual(lost, [], `${lost.length} acknowledged spans lost`);
  for (const [id, seq] of acked) assert.equal(storedSeq.get(id), seq, `span ${id} kept its sequence id`);
  const seqs = stored.map((s) => s.sequenceId);
  assert.equal(new Set(seqs).size, seqs.length, 'sequence ids are unique');
  return seqs;
}

describe('durability across SIGTERM and SIGKILL', () => {
  it('SIGTERM while spans stream in: answers what it accepted, stops cleanly, keeps every acknowledged span', async () => {
    const dataDir = tempDataDir('term');
    const first = await startDaemonProcess(dataDir);
    const { rollout, acked, exit } = await streamUntilStopped(first, 'SIGTERM');
    assert.equal(exit.code, 0, first.output().stderr);
    assert.match(first.output().stdout, /agl: stopped/);
    assert.ok(acked.size >= 40 * 25);
    const second = await startDaemonProcess(dataDir);
    try {
      assert.doesNotMatch(second.output().stderr, /did not shut down cleanly/);
      await assertAllAcknowledgedStored(second, rollout.id, acked);
    } finally {
      await second.stop('SIGTERM');
    }
  });

  it('SIGKILL while spans stream in: keeps every acknowledged span, and the restarted daemon says the last one crashed', async () => {
    const dataDir = tempDataDir('kill');
    const first = await startDaemonProcess(dataDir);
    const { rollout, attempt, acked, exit } = await streamUntilStopped(first, 'SIGKILL');
    assert.equal(exit.signal, 'SIGKILL');
    assert.ok(acked.size >= 40 * 25, `acknowledged ${acked.size} spans before the kill`);

    const status = await runCli(['status', '--data-dir', dataDir]);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /not running \(its process \(pid \d+\) is gone: it was killed or crashed/);

    const second = await startDaemonProcess(dataDir);
    try {
      assert.match(second.output().stderr, /did not shut down cleanly/);
      const seqs = await assertAllAcknowledgedStored(second, rollout.id, acked);
      // The store goes on issuing sequence ids after the highest one it kept.
      const more = await second.client.addSpan({ rolloutId: rollout.id, attemptId: attempt.id, name: 'after-restart', startTime: Date.now() });
      assert.ok(more.sequenceId > Math.max(...seqs));
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
