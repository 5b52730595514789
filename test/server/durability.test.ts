/**
 * `agl serve` killed with SIGKILL while spans stream in: every span the daemon acknowledged (HTTP 201)
 * is in the store after a restart, with the sequence id it was acknowledged with.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SpanInput } from '../../protocol/store.js';
import { runCli, startDaemonProcess, tempDataDir } from './daemon-process.js';

describe('durability across SIGKILL', () => {
  it('keeps every acknowledged span, and the restarted daemon says the last one crashed', async () => {
    const dataDir = tempDataDir('kill');
    const first = await startDaemonProcess(dataDir);
    const { rollout, attempt } = await first.client.startRollout({ input: { task: 'stream' }, workerId: 'w' });

    const acked = new Map<string, number>(); // spanId -> sequenceId
    let batchesAcked = 0;
    let killed = false;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let b = 0; !killed; b++) {
        const spans: SpanInput[] = Array.from({ length: 25 }, (_, i) => ({
          rolloutId: rollout.id, attemptId: attempt.id, spanId: `w${w}-b${b}-s${i}`, name: `round${i}`, startTime: Date.now(),
          attributes: { payload: 'x'.repeat(200), writer: w },
        }));
        try {
          const res = await first.client.addSpans(spans);
          for (const s of res.spans) acked.set(s.spanId, s.sequenceId);
          batchesAcked++;
        } catch {
          return; // the daemon died under this request: not acknowledged, nothing to expect
        }
      }
    });
    // Kill while the writers are mid-stream (after a fair number of acknowledged batches).
    while (batchesAcked < 40) await new Promise((r) => setTimeout(r, 5));
    killed = true;
    const exit = await first.stop('SIGKILL');
    assert.equal(exit.signal, 'SIGKILL');
    await Promise.all(writers);
    assert.ok(acked.size >= 40 * 25, `acknowledged ${acked.size} spans before the kill`);

    const status = await runCli(['status', '--data-dir', dataDir]);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /not running \(its process \(pid \d+\) is gone: it was killed or crashed/);

    const second = await startDaemonProcess(dataDir);
    try {
      assert.match(second.output().stderr, /did not shut down cleanly/);
      const stored = await second.client.querySpans({ rolloutId: rollout.id, limit: 10_000 });
      const storedSeq = new Map(stored.map((s) => [s.spanId, s.sequenceId]));
      const lost = [...acked.keys()].filter((id) => !storedSeq.has(id));
      assert.deepEqual(lost, [], `${lost.length} acknowledged spans lost`);
      for (const [id, seq] of acked) assert.equal(storedSeq.get(id), seq, `span ${id} kept its sequence id`);
      const seqs = stored.map((s) => s.sequenceId);
      assert.equal(new Set(seqs).size, seqs.length, 'sequence ids are unique');
      // The store goes on issuing sequence ids after the highest one it kept.
      const more = await second.client.addSpan({ rolloutId: rollout.id, attemptId: attempt.id, name: 'after-restart', startTime: Date.now() });
      assert.ok(more.spans[0].sequenceId > Math.max(...seqs));
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
