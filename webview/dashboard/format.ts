/**
 * The dashboard's numbers, pure (no DOM): metric values with sensible precision (3 significant digits,
 * exponent notation for learning-rate-sized values), axis ticks that stay readable at any scale ("1e-3",
 * not "0.001, 0, 0, 0"), TensorBoard's debiased EMA smoothing, and whether a series is constant.
 */

/** Values below this (and not 0) are written in exponent notation (learning rates: 1e-3, not 0.00100). */
const TINY = 1e-2;

/** `1e-4`, `2.5e-4`: a mantissa of at most `digits` significant digits without trailing zeros. */
export function fmtExponent(value: number, digits = 2): string {
  const [mantissa, exponent] = value.toExponential(digits - 1).split('e');
  const m = mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa;
  return `${m}e${Number(exponent)}`;
}

/** A metric value: integers as they are, 3 significant digits, exponents for tiny values, no decimals past 100. */
export function fmtMetric(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '-∞';
  if (Number.isInteger(value)) return Math.abs(value) >= 10_000 ? value.toLocaleString('en-US') : String(value);
  const abs = Math.abs(value);
  if (abs < TINY) return fmtExponent(value);
  if (abs >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

/** Compact units for axis ticks from a thousand up: 1.8k, 2.5M, 1G. */
const UNITS: readonly [number, string][] = [
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k'],
];

/** The fewest decimals (at most `max`) that write every value exactly (0.25 steps need two, 0.2 steps one). */
function fewestDecimals(values: number[], max = 6): number {
  let decimals = 0;
  while (decimals < max && !values.every((v) => Math.abs(v * 10 ** decimals - Math.round(v * 10 ** decimals)) < 1e-6)) decimals++;
  return decimals;
}

/**
 * Labels for axis ticks `splits` (evenly spaced, as uPlot makes them): all in exponent notation when the
 * axis spans tiny values, else with the fewest decimals that write each tick exactly, and from a thousand up in
 * compact units (`1.8k`, `12k`, `2.5M`), so a label stays as short as the axis is narrow at any magnitude.
 */
export function tickLabels(splits: number[]): string[] {
  const finite = splits.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return splits.map(() => '');
  const maxAbs = Math.max(...finite.map(Math.abs));
  if (maxAbs > 0 && maxAbs < 1e-2) return splits.map((v) => (v === 0 ? '0' : fmtExponent(v, 3)));
  const unit = UNITS.find(([size]) => maxAbs >= size);
  if (unit) {
    const [size, suffix] = unit;
    const decimals = fewestDecimals(
      finite.map((v) => v / size),
      3,
    );
    return splits.map((v) => (v === 0 ? '0' : `${Number((v / size).toFixed(decimals))}${suffix}`));
  }
  const decimals = fewestDecimals(finite);
  return splits.map((v) => (Object.is(v, -0) ? 0 : v).toFixed(decimals).replace(/^-(0\.?0*)$/, '$1'));
}

/**
 * Exponential moving average as TensorBoard draws it: `weight` 0 is the raw series, 0.99 very smooth;
 * debiased so the first values are not pulled towards 0. Nulls (steps without a value) stay null and
 * do not move the average.
 */
export function smoothEma(values: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return values.slice();
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    count++;
    return last / (1 - weight ** count);
  });
}

/** True when at least two values are present and all are equal (e.g. KL with no reference model: 0 every step). */
export function isConstant(values: number[]): boolean {
  if (values.length < 2) return false;
  const first = values[0];
  const tolerance = 1e-12 * Math.max(1, Math.abs(first));
  return values.every((v) => Math.abs(v - first) <= tolerance);
}

/** A run's duration: `42 s`, `6 min 12 s`, `1 h 05 min`. */
export function fmtElapsed(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}
