/**
 * Whether the dashboard's value axes fit their labels, read from what the browser drew (a webview page in chromium,
 * or the dashboard's frame inside VS Code in the e2e): per chart, the labels the axis drew (its `data-y-ticks`), the
 * space left of the plot on the canvas, the widest label measured in the axis's font, and the ink uPlot left in the
 * canvas's first two pixel columns, where a label too wide for its axis is cut ("L800" for 1,800).
 */
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';

export interface AxisFit {
  chart: string;
  labels: string[];
  /** Canvas pixels (CSS) from the canvas's left edge to the plot's. */
  space: number;
  /** The widest label in the axis's font (CSS px). */
  widest: number;
  /** Pixels with ink in the canvas's first two columns, over the plot's height. */
  edgeInk: number;
}

/** Every drawn chart's value axis, as drawn, in the document of `body` (`page.locator('body')`, or a webview frame's). */
export function axisFits(body: Locator): Promise<AxisFit[]> {
  return body.evaluate((root) =>
    [...root.ownerDocument.querySelectorAll<HTMLElement>('.chart-card')]
      .filter((card) => card.querySelector('.uplot') && card.offsetParent !== null)
      .map((card) => {
        const root = card.querySelector<HTMLElement>('.uplot')!;
        const canvas = card.querySelector('canvas')!;
        const over = card.querySelector('.u-over')!.getBoundingClientRect();
        const box = canvas.getBoundingClientRect();
        const labels = JSON.parse(root.dataset.yTicks ?? '[]') as string[];
        const family = getComputedStyle(root.ownerDocument.body).getPropertyValue('--vscode-font-family').trim() || 'sans-serif';
        const measure = root.ownerDocument.createElement('canvas').getContext('2d')!;
        measure.font = `11px ${family}`;
        const scale = canvas.width / box.width;
        const top = Math.floor((over.top - box.top) * scale);
        const rows = Math.max(1, Math.floor(over.height * scale));
        const pixels = canvas.getContext('2d')!.getImageData(0, top, Math.ceil(2 * scale), rows).data;
        let edgeInk = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) edgeInk++;
        return {
          chart: card.dataset.chart ?? '',
          labels,
          space: over.left - box.left,
          widest: Math.max(0, ...labels.map((l) => measure.measureText(l).width)),
          edgeInk,
        };
      }),
  );
}

/** uPlot's default tick length and gap between tick and label (chart-options.ts keeps both). */
const TICK_AND_GAP = 15;

/** Asserts every chart's value axis drew labels that fit whole: wide enough for the widest, no glyph cut at the edge. */
export function assertAxesFit(fits: AxisFit[], where: string): void {
  assert.ok(fits.length > 0, `${where}: no chart drawn`);
  for (const f of fits) {
    assert.ok(f.labels.length > 0, `${where}: chart ${f.chart} drew no value labels`);
    assert.ok(
      f.widest + TICK_AND_GAP + 1 <= f.space,
      `${where}: chart ${f.chart}'s axis is ${f.space.toFixed(1)} px for labels ${f.labels.join(', ')} (widest ${f.widest.toFixed(1)} px + ${TICK_AND_GAP} px of tick and gap)`,
    );
    assert.equal(f.edgeInk, 0, `${where}: chart ${f.chart}'s labels ${f.labels.join(', ')} are cut at the canvas's edge`);
  }
}
