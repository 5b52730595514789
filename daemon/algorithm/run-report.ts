/**
 * The training report: an HTML page (summary table, settings, the reward curve as a PNG beside it) and
 * the PNG itself (report-chart.ts: ECharts + resvg), written into the run's folder. Returns the paths so
 * the CLI can print where they are.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainerState } from './trainer-state.js';
import { describeHeldOut } from '../../protocol/metrics.js';
import { REWARD_CURVE_SIZE, TRAIN_SERIES, VAL_SERIES, rewardCurvePng } from './report-chart.js';

export interface ReportInput {
  title: string;
  state: TrainerState;
  agent: string;
  config: unknown;
  /** Extra lines for the summary table (e.g. what the run was measured on, its peak memory). */
  facts?: Record<string, string | number>;
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function writeReport(dir: string, r: ReportInput): { html: string; png: string } {
  mkdirSync(dir, { recursive: true });
  const png = join(dir, 'reward-curve.png');
  writeFileSync(png, rewardCurvePng({ train: r.state.train, val: r.state.val }));
  const before = r.state.val[0]?.reward,
    after = r.state.val.at(-1)?.reward;
  const best = r.state.best;
  const rows: [string, string | number][] = [
    ['agent', r.agent],
    ['steps', `${r.state.step} / ${r.state.totalSteps}`],
    ['held-out reward before', before === undefined ? '-' : describeHeldOut(before, r.state.val[0]?.tasks, 3)],
    ['held-out reward after', after === undefined ? '-' : describeHeldOut(after, r.state.val.at(-1)?.tasks, 3)],
    ['best held-out reward', best ? `${best.reward.toFixed(3)} at step ${best.step}` : '-'],
    ['training minutes', (r.state.elapsedMs / 60000).toFixed(1)],
    ...Object.entries(r.facts ?? {}),
  ];
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${esc(r.title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:900px}td{padding:2px 12px}pre{background:#f4f4f4;padding:1em}</style></head>
<body><h1>${esc(r.title)}</h1>
<table>${rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td><b>${esc(String(v))}</b></td></tr>`).join('')}</table>
<h2>Reward</h2>
<img src="reward-curve.png" alt="reward curve: ${esc(TRAIN_SERIES)} at each step, ${esc(VAL_SERIES)} at each validation" width="${REWARD_CURVE_SIZE.width}" height="${REWARD_CURVE_SIZE.height}">
<h2>Validation</h2><table><tr><td>step</td><td>reward</td><td>tasks</td></tr>${r.state.val.map((v) => `<tr><td>${v.step}</td><td>${v.reward.toFixed(3)}</td><td>${v.tasks ?? '-'}</td></tr>`).join('')}</table>
<h2>Settings</h2><pre>${esc(JSON.stringify(r.config, null, 2))}</pre></body></html>`;
  const htmlPath = join(dir, 'report.html');
  writeFileSync(htmlPath, html);
  return { html: htmlPath, png };
}
