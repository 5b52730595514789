/**
 * `agl doctor`: checks the machine for both policy engines: which TF.js backend loads (and why each one
 * before it did not) with a quick matmul speed probe, and the torch engine's Python (torch, transformers,
 * CUDA and GPUs, distributed backends for --procs).
 */
import * as tf from '@tensorflow/tfjs';
import { resolveDataDir } from '../../client/daemon-state.js';
import { BACKEND_ORDER, selectBackend } from '../model/backend.js';
import { resolveTorchPython, torchDoctor } from '../model/torch-env.js';
import { DOCTOR_COMMAND } from '../../protocol/cli-commands.js';
import { torchReport } from './engine.js';
import { parseCommand } from './flags.js';

function matmulGflops(): number {
  const n = 512;
  const a = tf.randomNormal([n, n]),
    b = tf.randomNormal([n, n]);
  tf.tidy(() => tf.matMul(a, b).dataSync());
  const reps = 10,
    t0 = performance.now();
  // Queue the products, then wait once (GPU backends run asynchronously).
  tf.tidy(() => {
    let last = tf.matMul(a, b);
    for (let i = 1; i < reps; i++) last = tf.matMul(a, b);
    last.dataSync();
  });
  const s = (performance.now() - t0) / 1000;
  a.dispose();
  b.dispose();
  return (2 * n ** 3 * reps) / s / 1e9;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(DOCTOR_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const { backend: requested, python: pythonFlag, json } = parsed.values;
  let report;
  try {
    report = await selectBackend(requested);
  } catch (e) {
    console.error(`agl doctor: ${(e as Error).message}`);
    return 1;
  }
  const gflops = matmulGflops();
  const { python, source } = resolveTorchPython(pythonFlag ?? null, resolveDataDir(undefined));
  const torch = torchDoctor(python);
  if (json) {
    console.log(
      JSON.stringify(
        { ...report, matmulGflops: gflops, node: process.version, tfjs: tf.version.tfjs, torch: { ...torch, pythonVersion: torch.python, python, source } },
        null,
        2,
      ),
    );
    return 0;
  }
  console.log(`policy engine backend: ${report.chosen} (tfjs ${tf.version.tfjs}, node ${process.version})`);
  for (const a of report.attempts) console.log(`  ${a.ok ? 'OK  ' : 'no  '} ${a.name.padEnd(9)} ${a.reason}`);
  const untried = BACKEND_ORDER.filter((n) => !report.attempts.some((a) => a.name === n));
  if (untried.length) console.log(`  (not tried: ${untried.join(', ')}${requested ? ' — backend was forced' : ''})`);
  console.log(`  512x512 float32 matmul: ${gflops.toFixed(1)} GFLOP/s`);
  for (const line of torchReport(python, source, torch)) console.log(line);
  return 0;
}
