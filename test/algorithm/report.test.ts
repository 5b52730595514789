/** The report's PNG is a valid PNG (signature, chunk CRCs, inflatable pixel data of the right size). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { crc32, lineChartPng } from '../../daemon/commands/png.js';
import { tasksForStep } from '../../daemon/algorithm/trainer.js';
import { parseTrainConfig, deepMerge } from '../../daemon/algorithm/config.js';

test('PNG chart: signature, IHDR, CRCs and pixel data check out', () => {
  const png = lineChartPng([{ points: [{ x: 0, y: 0.2 }, { x: 5, y: 0.8 }], color: [255, 0, 0] }], { width: 50, height: 30 });
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let off = 8;
  const chunks: { type: string; data: Buffer }[] = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off), type = png.toString('ascii', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    assert.equal(png.readUInt32BE(off + 8 + len), crc32(png.subarray(off + 4, off + 8 + len)), `CRC of ${type}`);
    chunks.push({ type, data });
    off += 12 + len;
  }
  assert.deepEqual(chunks.map((c) => c.type), ['IHDR', 'IDAT', 'IEND']);
  assert.equal(chunks[0].data.readUInt32BE(0), 50);
  assert.equal(chunks[0].data.readUInt32BE(4), 30);
  const raw = inflateSync(chunks[1].data);
  assert.equal(raw.length, (50 * 3 + 1) * 30);
  assert.ok(raw.includes(Buffer.from([255, 0, 0])), 'the series colour is drawn');
  assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926); // the standard CRC-32 check value
});

test('task order is a pure function of (seed, step) and covers the set once per epoch', () => {
  const train = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, input: i }));
  const epoch = [0, 1, 2, 3, 4].flatMap((s) => tasksForStep(train, 2, 7, s).map((t) => t.id));
  assert.deepEqual([...epoch].sort(), train.map((t) => t.id).sort());
  assert.deepEqual(tasksForStep(train, 2, 7, 3), tasksForStep(train, 2, 7, 3));
  assert.notDeepEqual(epoch, train.map((t) => t.id));
});

test('config: sections with defaults, unknown keys named, deep merge of file and flags', () => {
  const c = parseTrainConfig(deepMerge({ training: { grpo: { epsilon: 0.1 } } }, { training: { groupSize: 4 } }));
  assert.equal(c.training.grpo.epsilon, 0.1);
  assert.equal(c.training.grpo.epsilonHigh, 0.3);
  assert.equal(c.training.groupSize, 4);
  assert.equal(c.model.name, 'builtin:0.8m');
  assert.throws(() => parseTrainConfig({ training: { learningrate: 1 } }), /training: Unrecognized key.*learningrate/s);
  assert.throws(() => parseTrainConfig({ training: { grpo: { epsilon: 'x' } } }), /training\.grpo\.epsilon/);
});
