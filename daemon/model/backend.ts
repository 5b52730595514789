/**
 * Chooses the TF.js backend: tfjs-node-gpu -> tfjs-node -> webgpu (Dawn) -> wasm (SIMD) -> cpu, or the one
 * forced with --backend / AGL_BACKEND. Records why each candidate before the chosen one was not used, for
 * `agl doctor`. The backend is process-wide (TF.js keeps one engine per process).
 */
import { readdirSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { TFJS_BACKENDS } from '../../protocol/cli-commands.js';
import { installFastWasmKernels } from './wasm-kernels.js';
import { withNodeWasmThreads } from './wasm-threads.js';

export type BackendName = (typeof TFJS_BACKENDS)[number];
export const BACKEND_ORDER: BackendName[] = [...TFJS_BACKENDS];
export interface BackendAttempt {
  name: BackendName;
  ok: boolean;
  reason: string;
}
export interface BackendReport {
  chosen: BackendName;
  tfBackend: string;
  attempts: BackendAttempt[];
}

let current: BackendReport | null = null;

/** require() where this file runs as CommonJS (tsx, tests), import() in ESM bundles. */
async function load(pkg: string): Promise<unknown> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional package, loaded the way this module itself was
  return typeof require === 'function' ? require(pkg) : import(pkg);
}

function errText(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split('\n')[0].slice(0, 200);
}

async function tryNode(pkg: string): Promise<void> {
  await load(pkg); // registers the 'tensorflow' backend with the shared tfjs-core
  if (!(await tf.setBackend('tensorflow'))) throw new Error(`${pkg} loaded but the tensorflow backend did not initialise`);
}

/** Linux: a GPU the Vulkan driver could drive shows up as a device node; without one Dawn only finds a
 *  software adapter (slower than wasm) after printing driver warnings, so auto selection skips it. */
function linuxHasGpuDevice(): boolean {
  const has = (dir: string, re: RegExp) => {
    try {
      return readdirSync(dir).some((f) => re.test(f));
    } catch {
      return false;
    }
  };
  return has('/dev/dri', /^renderD\d+$/) || has('/dev', /^(nvidia\d+|dxg)$/);
}

async function tryWebgpu(allowSoftware: boolean): Promise<string> {
  if (!allowSoftware && process.platform === 'linux' && !linuxHasGpuDevice()) {
    throw new Error('no GPU device (/dev/dri/renderD*, /dev/nvidia*): not probed (--backend webgpu forces it)');
  }
  const { create, globals } = (await load('webgpu')) as {
    create: (opts: string[]) => { requestAdapter(): Promise<{ info?: Record<string, string>; isFallbackAdapter?: boolean } | null> };
    globals: Record<string, unknown>;
  };
  Object.assign(globalThis, globals);
  const gpu = create([]);
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter (needs libvulkan1 and a Vulkan GPU driver; Mesa < 25 lavapipe lacks required features)');
  const info = adapter.info ?? {};
  const desc = `${info.vendor ?? ''} ${info.architecture ?? ''} ${info.description ?? ''} ${info.device ?? ''}`.trim();
  const software = adapter.isFallbackAdapter || /llvmpipe|lavapipe|swiftshader|software|cpu/i.test(desc);
  if (software && !allowSoftware) throw new Error(`only a software adapter (${desc || 'fallback'}): slower than wasm on a CPU`);
  Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  await load('@tensorflow/tfjs-backend-webgpu');
  if (!(await tf.setBackend('webgpu'))) throw new Error('the tfjs webgpu backend did not initialise');
  return desc;
}

async function tryWasm(): Promise<string> {
  const wasm = (await load('@tensorflow/tfjs-backend-wasm')) as { setThreadsCount?: (n: number) => void; getThreadsCount?: () => number };
  const init = async () => {
    if (!(await tf.setBackend('wasm'))) throw new Error('the tfjs wasm backend did not initialise');
  };
  const threads = Number(process.env.AGL_WASM_THREADS ?? 1);
  let reason = 'WebAssembly SIMD, 1 thread (AGL_WASM_THREADS=2 tries the experimental threaded build)';
  if (threads > 1) {
    const got = await withNodeWasmThreads(threads, wasm, init);
    reason = `WebAssembly SIMD, threaded build, ${got} threads (experimental, AGL_WASM_THREADS)`;
  } else {
    // tfjs disables threads under Node anyway (blob: workers fail there); the SIMD single-thread build works.
    wasm.setThreadsCount?.(1);
    await init();
  }
  installFastWasmKernels();
  return reason;
}

async function tryOne(name: BackendName, forced: boolean): Promise<string> {
  switch (name) {
    case 'node-gpu':
      await tryNode('@tensorflow/tfjs-node-gpu');
      return 'libtensorflow with CUDA';
    case 'node':
      await tryNode('@tensorflow/tfjs-node');
      return 'libtensorflow on the CPU';
    case 'webgpu':
      return `WebGPU via Dawn: ${await tryWebgpu(forced)}`;
    case 'wasm':
      return tryWasm();
    case 'cpu':
      if (!(await tf.setBackend('cpu'))) throw new Error('cpu backend failed');
      return 'pure JavaScript (slow)';
  }
}

function parseName(s: string): BackendName {
  const alias: Record<string, BackendName> = { tensorflow: 'node', 'tfjs-node': 'node', 'tfjs-node-gpu': 'node-gpu', gpu: 'node-gpu' };
  const n = (alias[s] ?? s) as BackendName;
  if (!BACKEND_ORDER.includes(n)) throw new Error(`unknown backend "${s}": use one of ${BACKEND_ORDER.join(', ')} or auto`);
  return n;
}

/** Initialises a backend once per process; later calls return the same report (a different forced one is an error). */
export async function selectBackend(requested: string = process.env.AGL_BACKEND ?? 'auto'): Promise<BackendReport> {
  if (current) {
    if (requested !== 'auto' && parseName(requested) !== current.chosen) {
      throw new Error(`backend ${current.chosen} is already active in this process; cannot switch to ${requested}`);
    }
    return current;
  }
  const attempts: BackendAttempt[] = [];
  const candidates = requested === 'auto' ? BACKEND_ORDER : [parseName(requested)];
  for (const name of candidates) {
    try {
      const reason = await tryOne(name, requested !== 'auto');
      attempts.push({ name, ok: true, reason });
      await tf.ready();
      current = { chosen: name, tfBackend: tf.getBackend(), attempts };
      return current;
    } catch (e) {
      const code = (e as { code?: string }).code;
      attempts.push({ name, ok: false, reason: code === 'MODULE_NOT_FOUND' ? 'package not installed (optional dependency)' : errText(e) });
    }
  }
  throw new Error(`no TF.js backend could be loaded: ${attempts.map((a) => `${a.name}: ${a.reason}`).join('; ')}`);
}

export function activeBackend(): BackendReport | null {
  return current;
}
