/**
 * Faster replacements for three tfjs-backend-wasm 4.22 kernels, installed after the wasm backend starts.
 * Measured on the 2-core machine (CPU ms, 64 x [127,127]@[127,32]):
 * - BatchMatMul with batch > 1 runs a slow generic loop (~30 ms) while a 2-D product goes through
 *   XNNPACK (~6 ms for all 64). Ours calls the 2-D XNNPACK path once per batch item on zero-copy views
 *   of the operands (tensor ids registered on the C++ side at an offset into the parent's memory).
 * - Slice reads the WHOLE input through readSync (a full copy) for every slice: unstacking 64 slices of a
 *   4 MB tensor copied 256 MB (~140 ms). Ours copies only the slice, inside the wasm heap.
 * - Identity copied its input; the gradient tape clones every tensor it saves (~10% of a training step).
 * All fall back to the original kernel for anything else (transposes, broadcasting, strided slices).
 */
import * as tf from '@tensorflow/tfjs';

interface WasmData {
  id: number;
  memoryOffset: number;
  shape: number[];
  dtype: string;
}
interface WasmBackend {
  wasm: {
    HEAPU8: Uint8Array;
    cwrap: (name: string, ret: null, args: string[]) => (...a: unknown[]) => void;
    tfjs: { registerTensor(id: number, size: number, offset: number): void; disposeData(id: number): void };
  };
  dataIdMap: { get(dataId: unknown): WasmData };
  dataIdNextNumber: number;
  makeOutput(shape: number[], dtype: string): { dataId: unknown; shape: number[]; dtype: string };
}
type KernelArgs = { inputs: Record<string, tf.TensorInfo>; backend: WasmBackend; attrs: Record<string, unknown> };
type KernelFn = (args: KernelArgs) => tf.TensorInfo;

let installed = false;

function replaceKernel(name: string, make: (original: KernelFn) => KernelFn): void {
  const config = tf.getKernel(name, 'wasm');
  if (!config) throw new Error(`wasm kernel ${name} not found`);
  const original = config.kernelFunc as unknown as KernelFn;
  tf.unregisterKernel(name, 'wasm');
  tf.registerKernel({ ...config, kernelFunc: make(original) as unknown as tf.KernelFunc });
}

export function installFastWasmKernels(): void {
  if (installed) return;
  installed = true;
  let matmul2d: ((...a: unknown[]) => void) | null = null;

  replaceKernel('BatchMatMul', (original) => (args) => {
    const { a, b } = args.inputs;
    const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
    const ra = a.shape.length,
      rb = b.shape.length;
    const batch = a.shape.slice(0, -2).reduce((x, y) => x * y, 1);
    const sameBatch = ra === rb && a.shape.slice(0, -2).every((d, i) => d === b.shape[i]);
    const M = a.shape[ra - 2],
      K = a.shape[ra - 1],
      P = b.shape[rb - 1];
    // Small products (decoding steps: M = 1) are cheaper in the generic loop than one XNNPACK operator each.
    const small = M < 8 || M * K * P < 16 * 16 * 16;
    if (transposeA || transposeB || batch <= 1 || small || !sameBatch || a.dtype !== 'float32' || b.dtype !== 'float32') return original(args);
    const backend = args.backend;
    matmul2d ??= backend.wasm.cwrap('BatchMatMul', null, ['number', 'array', 'number', 'number', 'array', 'number', 'number', 'number', 'number']);
    const out = backend.makeOutput([...a.shape.slice(0, -2), M, P], 'float32');
    const aOff = backend.dataIdMap.get(a.dataId).memoryOffset;
    const bOff = backend.dataIdMap.get(b.dataId).memoryOffset;
    const oOff = backend.dataIdMap.get(out.dataId).memoryOffset;
    const aShape = new Uint8Array(new Int32Array([1, M, K]).buffer),
      bShape = new Uint8Array(new Int32Array([1, K, P]).buffer);
    const { tfjs } = backend.wasm;
    for (let i = 0; i < batch; i++) {
      const ia = backend.dataIdNextNumber++,
        ib = backend.dataIdNextNumber++,
        io = backend.dataIdNextNumber++;
      tfjs.registerTensor(ia, M * K, aOff + i * M * K * 4);
      tfjs.registerTensor(ib, K * P, bOff + i * K * P * 4);
      tfjs.registerTensor(io, M * P, oOff + i * M * P * 4);
      matmul2d(ia, aShape, 3, ib, bShape, 3, false, false, io);
      // Forget the views on the C++ side only (and any XNNPACK operator cached for them); memory stays owned by the parents.
      tfjs.disposeData(ia);
      tfjs.disposeData(ib);
      tfjs.disposeData(io);
    }
    return out as tf.TensorInfo;
  });

  // Identity (tf.clone, and every tensor the gradient tape saves) copied its input; share it instead,
  // as the cpu backend does: tensors are immutable and the backend reference-counts their memory.
  replaceKernel('Identity', (original) => (args) => {
    const { x } = args.inputs;
    if (x.dtype === 'string') return original(args);
    (args.backend as unknown as { incRef(id: unknown): void }).incRef(x.dataId);
    return { dataId: x.dataId, shape: x.shape, dtype: x.dtype } as tf.TensorInfo;
  });

  replaceKernel('Slice', (original) => (args) => {
    const { x } = args.inputs;
    const { begin, size } = args.attrs as { begin: number[]; size: number[] };
    if (x.dtype === 'string') return original(args);
    const [b, s] = tf.slice_util.parseSliceParams(x as unknown as tf.Tensor, begin, size);
    if (!tf.slice_util.isSliceContinous(x.shape, b, s)) return original(args);
    const backend = args.backend;
    const strides = tf.util.computeStrides(x.shape);
    const offset = tf.slice_util.computeFlatOffset(b, strides);
    const elt = tf.util.bytesPerElement(x.dtype);
    const out = backend.makeOutput(s, x.dtype);
    const src = backend.dataIdMap.get(x.dataId).memoryOffset + offset * elt;
    const dst = backend.dataIdMap.get(out.dataId).memoryOffset;
    const n = s.reduce((p, q) => p * q, 1) * elt;
    backend.wasm.HEAPU8.copyWithin(dst, src, src + n);
    return out as tf.TensorInfo;
  });
}
