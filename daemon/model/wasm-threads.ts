/**
 * Experimental, opt-in (AGL_WASM_THREADS=N): the multi-threaded SIMD build of tfjs-backend-wasm under Node.
 * tfjs turns threads off in Node (WASM_HAS_MULTITHREAD_SUPPORT is false when IS_NODE) because its pthread
 * workers are created from blob: URLs, which Node's worker_threads cannot load (ERR_WORKER_PATH). Here:
 *  1. the flag is forced on;
 *  2. while the backend initialises, Blob/URL.createObjectURL are wrapped so the worker script and the
 *     module factory it imports are written to temp files and referenced by path (the factory also needs
 *     the `require$$N` bindings of the bundle it was cut from);
 *  3. the C++ side sizes XNNPACK's pool as logical cores / 2 (it assumes hyper-threading), i.e. 1 on a
 *     2-core machine, so os.cpus() reports N*2 entries during initialisation.
 * Seen working here: the pool reports N threads and results match; the speed-up could not be measured on
 * the shared, overloaded development machine (see README).
 */
import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import { join } from 'node:path';

const FACTORY_PREFIX = 'var WasmBackendModuleThreadedSimd';
const BUNDLE_BINDINGS =
  "var require$$0=require('fs'),require$$1=require('path'),require$$3=require('perf_hooks'),require$$4=require('os'),commonjsGlobal=globalThis;";

/** Runs `init` (which must call tf.setBackend('wasm')) with the patches above; returns the thread count. */
export async function withNodeWasmThreads(
  threads: number,
  wasm: { setThreadsCount?: (n: number) => void; getThreadsCount?: () => number },
  init: () => Promise<void>,
): Promise<number> {
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true);
  wasm.setThreadsCount?.(threads);
  const dir = mkdtempSync(join(os.tmpdir(), 'agl-wasm-threads-'));
  const g = globalThis as unknown as { Blob: typeof Blob };
  const RealBlob = g.Blob;
  const realCreate = URL.createObjectURL;
  // The very object the tfjs bundle holds (its require$$4), not an ESM namespace copy.
  const osModule = createRequire(join(process.cwd(), 'noop.js'))('os') as { cpus: typeof os.cpus };
  const realCpus = osModule.cpus;
  let factoryPath = '';
  class FileBackedBlob extends RealBlob {
    readonly source: string;
    constructor(parts: ConstructorParameters<typeof RealBlob>[0] & unknown[], options?: ConstructorParameters<typeof RealBlob>[1]) {
      super(parts, options);
      this.source = parts.map(String).join('');
      if (this.source.startsWith(FACTORY_PREFIX)) {
        factoryPath = join(dir, 'factory.js');
        writeFileSync(factoryPath, BUNDLE_BINDINGS + this.source);
      }
    }
  }
  g.Blob = FileBackedBlob as unknown as typeof Blob;
  URL.createObjectURL = (blob: Blob) => {
    const source = (blob as FileBackedBlob).source;
    if (source === undefined) return realCreate(blob);
    // The worker imports the factory by path instead of through an object URL of the posted Blob.
    const worker = source.replace(
      'if(typeof e.data.urlOrBlob=="string"){importScripts(e.data.urlOrBlob)}',
      `if(true){importScripts(${JSON.stringify(factoryPath)})}`,
    );
    const path = join(dir, 'worker.js');
    writeFileSync(path, worker);
    return path;
  };
  osModule.cpus = () => {
    const c = realCpus();
    return Array.from({ length: threads * 2 }, (_, i) => c[i % c.length]);
  };
  try {
    await init();
  } finally {
    g.Blob = RealBlob;
    URL.createObjectURL = realCreate;
    osModule.cpus = realCpus;
  }
  // Pool workers must not keep the process alive (a CLI command would never exit).
  const pthread = (tf.backend() as unknown as { wasm?: { PThread?: { unusedWorkers: { unref(): void }[]; runningWorkers: { unref(): void }[] } } }).wasm
    ?.PThread;
  for (const w of [...(pthread?.unusedWorkers ?? []), ...(pthread?.runningWorkers ?? [])]) w.unref();
  return wasm.getThreadsCount?.() ?? 1;
}
