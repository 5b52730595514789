/**
 * safetensors read/write in plain TypeScript: 8-byte little-endian header length, a JSON header
 * ({name: {dtype, shape, data_offsets}, __metadata__}), then raw little-endian data.
 * Reading converts F16/BF16/F64/I64 to float32/int32 arrays, because TF.js computes in float32.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type DType = 'F32' | 'F16' | 'BF16' | 'F64' | 'I32' | 'I64' | 'U8' | 'BOOL';
export interface NamedArray {
  shape: number[];
  data: Float32Array | Int32Array;
}
export interface SafetensorsFile {
  tensors: Map<string, NamedArray>;
  metadata: Record<string, string>;
}

const BYTES: Record<DType, number> = { F32: 4, F16: 2, BF16: 2, F64: 8, I32: 4, I64: 8, U8: 1, BOOL: 1 };

function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function decode(dtype: DType, bytes: Buffer, name: string): Float32Array | Int32Array {
  const n = bytes.length / BYTES[dtype];
  // Copy into an aligned buffer: offsets inside the file need not be multiples of the element size.
  const aligned = new Uint8Array(bytes).buffer;
  switch (dtype) {
    case 'F32':
      return new Float32Array(aligned);
    case 'F64':
      return Float32Array.from(new Float64Array(aligned));
    case 'I32':
      return new Int32Array(aligned);
    case 'I64':
      return Int32Array.from(new BigInt64Array(aligned), (v) => Number(v));
    case 'U8':
    case 'BOOL':
      return Int32Array.from(new Uint8Array(aligned));
    case 'F16': {
      const h = new Uint16Array(aligned),
        out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = f16ToF32(h[i]);
      return out;
    }
    case 'BF16': {
      const h = new Uint16Array(aligned),
        bits = new Uint32Array(n);
      for (let i = 0; i < n; i++) bits[i] = h[i] << 16;
      return new Float32Array(bits.buffer);
    }
    default:
      throw new Error(`safetensors: tensor "${name}" has unsupported dtype ${dtype as string}`);
  }
}

export function parseSafetensors(buf: Buffer, what = 'buffer'): SafetensorsFile {
  if (buf.length < 8) throw new Error(`safetensors: ${what} is too short (${buf.length} bytes)`);
  const headerLen = Number(buf.readBigUInt64LE(0));
  if (headerLen > buf.length - 8) throw new Error(`safetensors: ${what} header length ${headerLen} exceeds file size`);
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const base = 8 + headerLen;
  const tensors = new Map<string, NamedArray>();
  let metadata: Record<string, string> = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = info as Record<string, string>;
      continue;
    }
    const {
      dtype,
      shape,
      data_offsets: [start, end],
    } = info as { dtype: DType; shape: number[]; data_offsets: [number, number] };
    if (!(dtype in BYTES)) throw new Error(`safetensors: ${what}: tensor "${name}" has unsupported dtype ${dtype}`);
    const count = shape.reduce((a, b) => a * b, 1);
    if (end - start !== count * BYTES[dtype] || base + end > buf.length) {
      throw new Error(`safetensors: ${what}: tensor "${name}" offsets [${start}, ${end}] do not match shape ${JSON.stringify(shape)} ${dtype}`);
    }
    tensors.set(name, { shape, data: decode(dtype, buf.subarray(base + start, base + end), name) });
  }
  return { tensors, metadata };
}

export function readSafetensors(path: string): SafetensorsFile {
  return parseSafetensors(readFileSync(path), path);
}

/** A file's metadata (`__metadata__`) alone: its header is read, not its tensors. */
export function readSafetensorsMetadata(path: string): Record<string, string> {
  const fd = openSync(path, 'r');
  try {
    const size = Buffer.alloc(8);
    if (readSync(fd, size, 0, 8, 0) < 8) throw new Error(`safetensors: ${path} is too short`);
    const header = Buffer.alloc(Number(size.readBigUInt64LE(0)));
    if (readSync(fd, header, 0, header.length, 8) < header.length) throw new Error(`safetensors: ${path}: its header is cut short`);
    return ((JSON.parse(header.toString('utf8')) as Record<string, unknown>).__metadata__ ?? {}) as Record<string, string>;
  } finally {
    closeSync(fd);
  }
}

/** Writes float32 (Float32Array) and int32 (Int32Array) tensors; names are sorted for reproducible files. */
export function serializeSafetensors(tensors: Map<string, NamedArray>, metadata: Record<string, string> = {}): Buffer {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length) header.__metadata__ = metadata;
  const names = [...tensors.keys()].sort();
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const bytes = t.data.byteLength;
    header[name] = { dtype: t.data instanceof Int32Array ? 'I32' : 'F32', shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8); // keep data 8-byte aligned, as the reference writer does
  const headerBytes = Buffer.from(json, 'utf8');
  const out = Buffer.alloc(8 + headerBytes.length + offset);
  out.writeBigUInt64LE(BigInt(headerBytes.length), 0);
  headerBytes.copy(out, 8);
  let at = 8 + headerBytes.length;
  for (const name of names) {
    const d = tensors.get(name)!.data;
    Buffer.from(d.buffer, d.byteOffset, d.byteLength).copy(out, at);
    at += d.byteLength;
  }
  return out;
}

export function writeSafetensors(path: string, tensors: Map<string, NamedArray>, metadata: Record<string, string> = {}): void {
  writeFileSync(path, serializeSafetensors(tensors, metadata));
}

/** Reads every tensor of a HF model folder: model.safetensors, or the shards listed in model.safetensors.index.json. */
export function readModelFolder(dir: string): Map<string, NamedArray> {
  const index = join(dir, 'model.safetensors.index.json');
  if (existsSync(index)) {
    const { weight_map } = JSON.parse(readFileSync(index, 'utf8')) as { weight_map: Record<string, string> };
    const all = new Map<string, NamedArray>();
    for (const shard of new Set(Object.values(weight_map))) {
      for (const [k, v] of readSafetensors(join(dir, shard)).tensors) all.set(k, v);
    }
    const missing = Object.keys(weight_map).filter((k) => !all.has(k));
    if (missing.length) throw new Error(`safetensors index lists tensors missing from its shards: ${missing.slice(0, 5).join(', ')}`);
    return all;
  }
  const single = join(dir, 'model.safetensors');
  if (!existsSync(single)) throw new Error(`no model.safetensors or model.safetensors.index.json in ${dir}`);
  return readSafetensors(single).tensors;
}
