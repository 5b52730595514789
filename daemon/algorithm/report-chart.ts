/**
 * The training report's reward curve as a PNG: an Apache ECharts line chart (training reward per step,
 * held-out reward at each validation; axis titles, legend) rendered to SVG by ECharts' server-side mode
 * in plain Node (no browser, no canvas), then rasterised by resvg (@resvg/resvg-js, a prebuilt native
 * binary from the npm registry). Text is drawn with the DejaVu Sans font of the `dejavu-fonts-ttf` package
 * and system fonts are not loaded, so the image is the same on every machine, fonts installed or not.
 */
import { createRequire } from 'node:module';
import { Resvg } from '@resvg/resvg-js';
import { LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { SVGRenderer } from 'echarts/renderers';

echarts.use([LineChart, GridComponent, LegendComponent, SVGRenderer]);

export interface RewardCurve {
  train: { step: number; reward: number }[];
  val: { step: number; reward: number }[];
}

export interface ChartSize {
  /** Size of the chart in CSS pixels (the SVG); the PNG has `scale` times as many pixels each way. */
  width: number;
  height: number;
  scale: number;
}

export const REWARD_CURVE_SIZE: ChartSize = { width: 720, height: 360, scale: 2 };
export const TRAIN_SERIES = 'training reward (mean over the step’s rollouts)';
export const VAL_SERIES = 'held-out reward (validation)';
export const TRAIN_COLOR = '#3b75c4';
export const VAL_COLOR = '#d9541e';
const FONT = 'DejaVu Sans';

/** The ECharts option of the reward curve. */
export function rewardCurveOption(curve: RewardCurve): echarts.EChartsCoreOption {
  // Step k's training reward and the validation after k updates share the x of step k (protocol/metrics.ts FIRST_TRAINING_STEP).
  const train = curve.train.map((p) => [p.step, p.reward]);
  const val = curve.val.map((p) => [p.step, p.reward]);
  const rewards = [...train, ...val].map((p) => p[1]);
  const steps = [...train, ...val].map((p) => p[0]);
  return {
    animation: false,
    backgroundColor: '#ffffff',
    textStyle: { fontFamily: FONT },
    legend: { top: 6, itemWidth: 22, itemGap: 40, textStyle: { fontSize: 12, color: '#333' }, data: [TRAIN_SERIES, VAL_SERIES] },
    grid: { left: 70, right: 28, top: 44, bottom: 58 },
    ...stepRewardAxes(
      { name: 'training step (policy updates)', max: Math.max(1, ...steps) },
      { name: 'mean final reward per rollout', min: Math.min(0, ...rewards), max: Math.max(1, ...rewards) },
    ),
    series: [
      { name: TRAIN_SERIES, type: 'line', data: train, color: TRAIN_COLOR, symbol: 'circle', symbolSize: 4, lineStyle: { width: 2 } },
      { name: VAL_SERIES, type: 'line', data: val, color: VAL_COLOR, symbol: 'circle', symbolSize: 8, lineStyle: { width: 2.5 } },
    ],
  };
}

/** The axes of a reward-per-step chart (the report's and the roles bench's): step along x from 0, reward up y. */
export function stepRewardAxes(
  x: { name: string; max: number },
  y: { name: string; min: number; max: number },
): Pick<echarts.EChartsCoreOption, 'xAxis' | 'yAxis'> {
  const axisName = { color: '#333', fontSize: 13 };
  const axisLine = { lineStyle: { color: '#888' } };
  return {
    xAxis: {
      type: 'value',
      name: x.name,
      nameLocation: 'middle',
      nameGap: 32,
      nameTextStyle: axisName,
      min: 0,
      max: x.max,
      minInterval: 1,
      axisLine,
      splitLine: { show: false },
      axisLabel: { color: '#444', fontSize: 12 },
    },
    yAxis: {
      type: 'value',
      name: y.name,
      nameLocation: 'middle',
      nameGap: 46,
      nameTextStyle: axisName,
      min: y.min,
      max: y.max,
      axisLine: { show: true, ...axisLine },
      splitLine: { lineStyle: { color: '#e8e8e8' } },
      axisLabel: { color: '#444', fontSize: 12, formatter: (v: number) => v.toFixed(1) },
    },
  };
}

/** The SVG ECharts draws for an option, server-side (no DOM). */
export function optionToSvg(option: echarts.EChartsCoreOption, size: ChartSize): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: size.width, height: size.height });
  try {
    chart.setOption(option);
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

function fontFile(): string {
  return createRequire(import.meta.url).resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf');
}

/** An SVG rasterised to PNG at `scale` (2 = crisp on high-density screens), with the shipped font only. */
export function svgToPng(svg: string, scale: number): Buffer {
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: scale },
    background: 'white',
    font: { loadSystemFonts: false, fontFiles: [fontFile()], defaultFontFamily: FONT },
  });
  return Buffer.from(resvg.render().asPng());
}

/** The report's reward curve as PNG bytes, `size.width * scale` x `size.height * scale` pixels. */
export function rewardCurvePng(curve: RewardCurve, size: ChartSize = REWARD_CURVE_SIZE): Buffer {
  return svgToPng(optionToSvg(rewardCurveOption(curve), size), size.scale);
}
