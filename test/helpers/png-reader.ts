/**
 * Reads a PNG file the way an image viewer must (test helper, independent of whatever wrote it): the
 * signature, every chunk's CRC-32, IHDR, the zlib stream of the IDAT chunks, and each row's filter
 * (none, sub, up, average, Paeth) undone, giving 8-bit RGBA pixels. Throws on anything malformed.
 */
import { inflateSync } from 'node:zlib';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export interface DecodedPng {
  width: number;
  height: number;
  chunkTypes: string[];
  rgba: Uint8Array;
}

/** Channels per colour type (8-bit depth): grey, RGB, grey+alpha, RGBA. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

export function readPng(png: Buffer): DecodedPng {
  if (!SIGNATURE.every((b, i) => png[i] === b)) throw new Error('not a PNG: bad signature');
  const chunkTypes: string[] = [];
  const idat: Buffer[] = [];
  let ihdr: Buffer | null = null;
  for (let off = 8; off < png.length;) {
    const len = png.readUInt32BE(off),
      type = png.toString('ascii', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (png.readUInt32BE(off + 8 + len) !== crc32(png.subarray(off + 4, off + 8 + len))) throw new Error(`bad CRC in chunk ${type}`);
    chunkTypes.push(type);
    if (type === 'IHDR') ihdr = data;
    if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  if (!ihdr || chunkTypes[0] !== 'IHDR' || chunkTypes.at(-1) !== 'IEND') throw new Error(`chunks out of order: ${chunkTypes.join(',')}`);
  const width = ihdr.readUInt32BE(0),
    height = ihdr.readUInt32BE(4),
    depth = ihdr[8],
    colorType = ihdr[9],
    interlace = ihdr[12];
  const channels = CHANNELS[colorType];
  if (depth !== 8 || !channels || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${interlace}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== (stride + 1) * height) throw new Error(`pixel data is ${raw.length} bytes, expected ${(stride + 1) * height}`);
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c,
        pa = Math.abs(p - a),
        pb = Math.abs(p - b),
        pc = Math.abs(p - c);
      const predictor = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter];
      if (predictor === undefined) throw new Error(`row ${y}: unknown filter ${filter}`);
      out[y * stride + x] = (v + predictor) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const px = out.subarray(i * channels, i * channels + channels);
    const [r, g, b, alpha] = channels >= 3 ? [px[0], px[1], px[2], channels === 4 ? px[3] : 255] : [px[0], px[0], px[0], channels === 2 ? px[1] : 255];
    rgba.set([r, g, b, alpha], i * 4);
  }
  return { width, height, chunkTypes, rgba };
}

/** How many pixels inside the box [x0, x1) x [y0, y1) satisfy `test(r, g, b)`. */
export function countPixels(
  img: DecodedPng,
  box: { x0: number; y0: number; x1: number; y1: number },
  test: (r: number, g: number, b: number) => boolean,
): number {
  let n = 0;
  for (let y = Math.max(0, box.y0); y < Math.min(img.height, box.y1); y++) {
    for (let x = Math.max(0, box.x0); x < Math.min(img.width, box.x1); x++) {
      const i = (y * img.width + x) * 4;
      if (test(img.rgba[i], img.rgba[i + 1], img.rgba[i + 2])) n++;
    }
  }
  return n;
}
