/**
 * The width of a chart's value axis (uPlot's `size` callback), apart from the chart's other options so that its rule can
 * be checked on its own: the widest label as the canvas measures it, plus the tick, the gap and a margin.
 */
import type uPlot from 'uplot';

/** Space between a tick label and the canvas edge, so the widest label's first glyph is never cut. */
const AXIS_MARGIN = 4;

/**
 * The value axis's width: its widest label as the canvas measures it in the axis's font, plus the tick and the gap
 * (uPlot's own recipe for axes that fit their labels; a width guessed per character clipped "1800" to "L800").
 */
export function valueAxisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx] as uPlot.Axis & { _size?: number };
  // Once the plot is made, uPlot keeps the font as [font scaled to the device's pixels, size]: measure in it, then unscale.
  const scaled = Array.isArray(axis.font);
  u.ctx.font = scaled ? (axis.font as unknown as [string, number])[0] : (axis.font ?? '11px sans-serif');
  const ratio = scaled ? (globalThis.devicePixelRatio ?? 1) : 1;
  const widest = Math.max(0, ...(values ?? []).map((v) => u.ctx.measureText(String(v)).width / ratio));
  const fit = Math.ceil((axis.ticks?.size ?? 10) + (axis.gap ?? 5) + widest + AXIS_MARGIN);
  // uPlot asks again as the ticks settle, and a later pass may pick finer ones (0.45 becomes 0.425): within one layout
  // the axis only grows, so the labels it ends with fit (a real calc run's reward/std once drew 0.425 in a 44 px axis
  // sized for 0.45), and sizes cannot swing back and forth.
  return cycleNum > 1 && axis._size ? Math.max(axis._size, fit) : fit;
}
