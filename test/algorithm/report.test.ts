/**
 * The training report: its reward curve is a PNG that ECharts (server-side SVG) and resvg draw, of the
 * advertised size, with both series in their colours and text (axis titles, legend, tick labels) really
 * drawn with the shipped font; the HTML shows it. Also: task order and config parsing of `agl train`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REWARD_CURVE_SIZE, TRAIN_COLOR, TRAIN_SERIES, VAL_COLOR, VAL_SERIES, optionToSvg, rewardCurveOption } from '../../daemon/algorithm/report-chart.js';
import { writeReport } from '../../daemon/algorithm/run-report.js';
import { tasksForStep } from '../../daemon/algorithm/schedule.js';
import type { TrainerState } from '../../daemon/algorithm/trainer-state.js';
import { parseTrainConfig, deepMerge } from '../../daemon/algorithm/config.js';
import { countPixels, readPng } from '../helpers/png-reader.js';

const near = (hex: string, tolerance = 40) => {
  const [R, G, B] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return (r: number, g: number, b: number) => Math.abs(r - R) + Math.abs(g - G) + Math.abs(b - B) <= tolerance;
};
const dark = (r: number, g: number, b: number) => r < 120 && g < 120 && b < 120;

function trainedState(): TrainerState {
  const train = Array.from({ length: 30 }, (_, i) => ({ step: i + 1, reward: 0.3 + 0.6 * (1 - Math.exp(-(i + 1) / 8)) }));
  const val = [0, 5, 10, 15, 20, 25, 30].map((step) => ({ step, reward: 0.29 + 0.62 * (1 - Math.exp(-step / 7)) }));
  return { runId: 'run-report', step: 30, totalSteps: 30, elapsedMs: 6 * 60_000, train, val, best: { step: 30, reward: val.at(-1)!.reward } };
}

test('report: the reward curve PNG is drawn by ECharts + resvg at its size, with both series, axis titles and legend; the HTML shows it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-report-'));
  try {
    const state = trainedState();
    const out = writeReport(dir, {
      title: 'Training report: calc',
      state,
      agent: 'samples/calc/agent.ts#calcAgent',
      config: { training: { learningRate: 1e-4 } },
    });
    const png = readPng(readFileSync(out.png));
    const { width, height, scale } = REWARD_CURVE_SIZE;
    assert.deepEqual([png.width, png.height], [width * scale, height * scale]);
    assert.deepEqual([png.chunkTypes[0], png.chunkTypes.at(-1)], ['IHDR', 'IEND']);
    const all = { x0: 0, y0: 0, x1: png.width, y1: png.height };
    assert.ok(countPixels(png, all, near(TRAIN_COLOR)) > 500, 'the training reward line is drawn in its colour');
    assert.ok(countPixels(png, all, near(VAL_COLOR)) > 500, 'the held-out reward line is drawn in its colour');
    // Text is glyphs of the shipped font: dark pixels where the y title (left margin), x title (bottom) and legend (top) are.
    assert.ok(countPixels(png, { x0: 0, y0: 0, x1: 30 * scale, y1: png.height }, dark) > 300, 'y-axis title drawn');
    assert.ok(countPixels(png, { x0: 0, y0: (height - 28) * scale, x1: png.width, y1: png.height }, dark) > 300, 'x-axis title drawn');
    assert.ok(countPixels(png, { x0: 0, y0: 0, x1: png.width, y1: 28 * scale }, dark) > 300, 'legend text drawn');
    const svg = optionToSvg(rewardCurveOption(state), REWARD_CURVE_SIZE);
    for (const text of ['training step (policy updates)', 'mean final reward per rollout', TRAIN_SERIES, VAL_SERIES]) {
      assert.ok(svg.includes(`>${text}</text>`), `the chart's SVG holds "${text}"`);
    }
    const html = readFileSync(out.html, 'utf8');
    assert.match(html, new RegExp(`<img src="reward-curve.png" alt="[^"]*held-out reward[^"]*" width="${width}" height="${height}">`));
    assert.ok(html.includes(`best held-out reward</td><td><b>${state.best!.reward.toFixed(3)} at step 30</b>`), 'the best validation is in the summary');
    const keep = join(process.cwd(), 'test-results', 'report');
    mkdirSync(keep, { recursive: true });
    copyFileSync(out.png, join(keep, 'reward-curve.png'));
    copyFileSync(out.html, join(keep, 'report.html'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('task order is a pure function of (seed, step) and covers the set once per epoch', () => {
  const train = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, input: i }));
  const epoch = [0, 1, 2, 3, 4].flatMap((s) => tasksForStep(train, 2, 7, s).map((t) => t.id));
  assert.deepEqual([...epoch].sort(), train.map((t) => t.id).sort());
  assert.deepEqual(tasksForStep(train, 2, 7, 3), tasksForStep(train, 2, 7, 3));
  assert.notDeepEqual(
    epoch,
    train.map((t) => t.id),
  );
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
