/**
 * A PNG line chart drawn and encoded in plain TypeScript (node:zlib for deflate, CRC-32 by table), so a
 * training report needs no browser or native canvas. Draws axes, light grid lines and one polyline per
 * series, and numeric tick labels in a 3x5 pixel font (digits and '.'); titles are left to the HTML.
 */
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; t[n] = c >>> 0; }
  return t;
})();
export function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Encodes RGB pixels (width*height*3 bytes, rows top to bottom) as a PNG file. */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width * 3 + 1)] = 0; // filter: none
    Buffer.from(rgb.buffer, rgb.byteOffset + y * width * 3, width * 3).copy(raw, y * (width * 3 + 1) + 1);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0; // 8-bit RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', new Uint8Array())]);
}

/** 3x5 glyphs, rows top to bottom, 3 bits each (left = 4). */
const GLYPHS: Record<string, number[]> = {
  '0': [7, 5, 5, 5, 7], '1': [2, 6, 2, 2, 7], '2': [7, 1, 7, 4, 7], '3': [7, 1, 7, 1, 7], '4': [5, 5, 7, 1, 1],
  '5': [7, 4, 7, 1, 7], '6': [7, 4, 7, 5, 7], '7': [7, 1, 1, 1, 1], '8': [7, 5, 7, 5, 7], '9': [7, 5, 7, 1, 7], '.': [0, 0, 0, 0, 2],
  A: [2, 5, 7, 5, 5], B: [6, 5, 6, 5, 6], C: [3, 4, 4, 4, 3], D: [6, 5, 5, 5, 6], E: [7, 4, 6, 4, 7], F: [7, 4, 6, 4, 4],
  G: [3, 4, 5, 5, 3], H: [5, 5, 7, 5, 5], I: [7, 2, 2, 2, 7], J: [1, 1, 1, 5, 2], K: [5, 5, 6, 5, 5], L: [4, 4, 4, 4, 7],
  M: [5, 7, 7, 5, 5], N: [6, 5, 5, 5, 5], O: [2, 5, 5, 5, 2], P: [6, 5, 6, 4, 4], Q: [2, 5, 5, 6, 3], R: [6, 5, 6, 5, 5],
  S: [3, 4, 2, 1, 6], T: [7, 2, 2, 2, 2], U: [5, 5, 5, 5, 7], V: [5, 5, 5, 5, 2], W: [5, 5, 7, 7, 5], X: [5, 5, 2, 5, 5],
  Y: [5, 5, 2, 2, 2], Z: [7, 1, 2, 4, 7], '-': [0, 0, 7, 0, 0], ' ': [0, 0, 0, 0, 0], '(': [1, 2, 2, 2, 1], ')': [4, 2, 2, 2, 4],
};

/** `legend`: its name in the key above the plot (letters are drawn upper-case). */
export interface Series { points: { x: number; y: number }[]; color: [number, number, number]; legend?: string }

/** A line chart of the series on [xmin, xmax] x [ymin, ymax] (y defaults to 0..1, as rewards are), with a key and an x-axis name. */
export function lineChartPng(series: Series[], o: { width?: number; height?: number; yMin?: number; yMax?: number; xLabel?: string } = {}): Buffer {
  const W = o.width ?? 640, H = o.height ?? 320, pad = 28;
  const px = new Uint8Array(W * H * 3).fill(255);
  const set = (x: number, y: number, c: [number, number, number]) => {
    if (x < 0 || y < 0 || x >= W || y >= H) return;
    const i = (Math.round(y) * W + Math.round(x)) * 3;
    px[i] = c[0]; px[i + 1] = c[1]; px[i + 2] = c[2];
  };
  const line = (x0: number, y0: number, x1: number, y1: number, c: [number, number, number], thick = 1) => {
    const n = Math.max(1, Math.ceil(Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0))));
    for (let k = 0; k <= n; k++) {
      const x = x0 + ((x1 - x0) * k) / n, y = y0 + ((y1 - y0) * k) / n;
      for (let dx = -thick + 1; dx < thick; dx++) for (let dy = -thick + 1; dy < thick; dy++) set(x + dx, y + dy, c);
    }
  };
  const all = series.flatMap((s) => s.points);
  const xMin = Math.min(0, ...all.map((p) => p.x)), xMax = Math.max(1, ...all.map((p) => p.x));
  const yMin = o.yMin ?? 0, yMax = o.yMax ?? 1;
  const X = (x: number) => pad + ((x - xMin) / (xMax - xMin || 1)) * (W - 2 * pad);
  const Y = (y: number) => H - pad - ((y - yMin) / (yMax - yMin || 1)) * (H - 2 * pad);
  for (let k = 0; k <= 10; k++) line(pad, Y(yMin + ((yMax - yMin) * k) / 10), W - pad, Y(yMin + ((yMax - yMin) * k) / 10), [230, 230, 230]);
  line(pad, H - pad, W - pad, H - pad, [0, 0, 0]);
  line(pad, pad, pad, H - pad, [0, 0, 0]);
  const text = (str: string, x: number, y: number, scale = 2, color: [number, number, number] = [90, 90, 90]) => {
    [...str.toUpperCase()].forEach((ch, k) => (GLYPHS[ch] ?? []).forEach((row, r) => {
      for (let c = 0; c < 3; c++) if (row & (4 >> c)) for (let a = 0; a < scale; a++) for (let b = 0; b < scale; b++) set(x + (k * 4 + c) * scale + a, y + r * scale + b, color);
    }));
  };
  const label = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
  for (const v of [yMin, (yMin + yMax) / 2, yMax]) text(label(v), 2, Y(v) - 5);
  for (const v of [xMin, xMax]) text(label(v), X(v) - 4, H - pad + 6);
  if (o.xLabel) text(o.xLabel, W / 2 - o.xLabel.length * 4, H - pad + 6);
  // The key, in the top margin: a coloured bar and the series' name in its colour.
  let kx = pad + 8;
  for (const s of series) {
    if (!s.legend) continue;
    for (let t = 0; t < 3; t++) line(kx, 10 + t, kx + 14, 10 + t, s.color);
    text(s.legend, kx + 20, 6, 2, s.color);
    kx += 20 + s.legend.length * 8 + 24;
  }
  for (const s of series) {
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    for (let i = 1; i < pts.length; i++) line(X(pts[i - 1].x), Y(pts[i - 1].y), X(pts[i].x), Y(pts[i].y), s.color, 2);
    for (const p of pts) for (let d = -2; d <= 2; d++) { set(X(p.x) + d, Y(p.y), s.color); set(X(p.x), Y(p.y) + d, s.color); }
  }
  return encodePng(W, H, px);
}
