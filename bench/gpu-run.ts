/**
 * `npm run bench:gpu [-- --quick] [-- --shapes ...]`: bench/gpu.py with the torch engine's Python (AGL_PYTHON, else the
 * venv `agl engine install torch` made). The script itself needs no Node: on a GPU machine run `python3 bench/gpu.py`.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { resolveTorchPython } from '../daemon/model/torch-env.js';

const { python, source } = resolveTorchPython(null);
process.stderr.write(`bench:gpu: ${python} (${source})\n`);
const r = spawnSync(python, [join('bench', 'gpu.py'), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, HF_HUB_OFFLINE: '1' } });
process.exit(r.status ?? 1);
