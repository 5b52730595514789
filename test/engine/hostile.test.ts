/**
 * No request kills the engine: hostile requests sent through the daemon's own engine client (the same socket and
 * framing agl train uses) are each answered with a result or a non-fatal error, and after every one the engine
 * still serves. The requests are valid ones with one field made hostile: token ids outside the vocabulary or not
 * integers, lengths past the context, maxTokens 0 or -5, NaN / infinite numbers (JSON carries them as null, or
 * as 1e999 which parses to infinity), wrong types, missing and unknown fields, unknown adapters and methods.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_OPTIMIZER } from '../../protocol/engine.js';
import { EngineError, startTorchEngine, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { torchPython } from '../helpers/torch.js';
import { tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');
const VOCAB = 264;

type Request = { method: string; params: Record<string, unknown> };

function valid(scratch: string): Request[] {
  const pairs = [
    { promptIds: [256, 81, 58, 50], completionIds: [52, 50, 261] },
    { promptIds: [256, 65], completionIds: [66] },
  ];
  return [
    { method: 'generate', params: { prompts: [[256, 81, 58]], maxTokens: 4, temperature: 1, seed: 3, eos: [261], stream: false } },
    { method: 'generate', params: { prompts: [[256, 81], [65]], maxTokens: 3, temperature: 0.7, topP: 0.9, topK: 5, seed: 1, eos: [261], stream: true } },
    { method: 'score', params: { pairs } },
    { method: 'train_step', params: { pairs, loss: { kind: 'nll' }, optimizer: { ...DEFAULT_OPTIMIZER, lr: 1e-7 } } },
    {
      method: 'train_step',
      params: {
        pairs,
        optimizer: { ...DEFAULT_OPTIMIZER, lr: 1e-7 },
        loss: tokenMeanGrpo(
          [
            { advantage: 1, oldLogprobs: [-1, -2, -0.5] },
            { advantage: -1, oldLogprobs: [-3] },
          ],
          { ratioBase: 'update', tisCap: 3 },
        ),
      },
    },
    { method: 'save', params: { dir: join(scratch, 'saved') } },
  ];
}

const HOSTILE = fc.oneof(
  fc.constantFrom(-1, -5, 0, VOCAB, VOCAB + 1, 2 ** 31, 2 ** 53, 1.5, -0.0, 1e308, null, '7', true, [], {}, [[]], 'x'.repeat(3)),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.double({ noNaN: true }),
  fc.array(fc.integer({ min: -10, max: 400 }), { maxLength: 300 }),
  fc.string({ maxLength: 20 }),
);

/** Every path to a value inside a request's params (fields, list items). */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return [at, ...v.slice(0, 3).flatMap((x, i) => paths(x, [...at, i]))];
  if (v && typeof v === 'object') return [at, ...Object.entries(v).flatMap(([k, x]) => paths(x, [...at, k]))];
  return [at];
}

function mutate(params: Record<string, unknown>, path: (string | number)[], value: unknown, op: 'set' | 'delete' | 'add'): unknown {
  const copy = structuredClone(params) as Record<string, unknown>;
  if (path.length === 0) return op === 'add' ? { ...copy, extra: value } : value;
  let node = copy as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (op === 'delete' && !Array.isArray(node)) delete node[last];
  else if (op === 'add' && node[last] && typeof node[last] === 'object' && !Array.isArray(node[last]))
    (node[last] as Record<string, unknown>).unknownKey = value;
  else node[last] = value;
  return copy;
}

/** The engine answers a valid request (one score of one token) after whatever came before. */
async function stillServes(e: TorchPolicyModel): Promise<void> {
  const [row] = await e.call('score', { pairs: [{ promptIds: [256, 81], completionIds: [VOCAB - 1] }] });
  assert.ok(row!.length === 1 && Number.isFinite(row![0]), JSON.stringify(row));
}

describe('torch engine: hostile requests through the daemon client', () => {
  let e: TorchPolicyModel;
  let scratch = '';
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-hostile-'));
    e = await startTorchEngine(WARMUP, { python: torchPython() });
  });
  after(async () => {
    await e.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('every valid request is served (the mutations start from requests that work)', async () => {
    for (const r of valid(scratch)) await e.call(r.method as never, r.params as never);
  });

  it('a request with one hostile field is answered, never fatal, and the engine still serves', async () => {
    const requests = valid(scratch);
    let refused = 0,
      served = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: requests.length - 1 }),
        fc.nat(),
        HOSTILE,
        fc.constantFrom('set', 'set', 'set', 'delete', 'add'),
        async (which, pick, value, op) => {
          const r = requests[which]!;
          const all = paths(r.params);
          const path = all[pick % all.length]!;
          if (r.method === 'save' && path[0] === 'dir' && typeof value === 'string') return; // never write where a fuzzer says
          const params = mutate(r.params, path, value, op as 'set' | 'delete' | 'add');
          try {
            await e.call(r.method as never, params as never);
            served++;
          } catch (err) {
            assert.ok(err instanceof EngineError, `${r.method} ${JSON.stringify(path)}: ${String(err)}`);
            assert.equal(err.fatal, false, `${r.method} ${JSON.stringify(path)} = ${JSON.stringify(value)}: a fatal answer: ${err.message}`);
            refused++;
          }
          await stillServes(e);
        },
      ),
      { numRuns: 250, seed: 20261126 },
    );
    console.log(`hostile requests: ${refused} refused, ${served} served; the engine served after each`);
    assert.ok(refused > 100, `most mutations are refused (${refused})`);
  });

  it('unknown methods, NaN and infinity arrive as errors naming the field', async () => {
    await assert.rejects(e.call('explode' as never, {} as never), /unknown method 'explode'/);
    const r = valid(scratch)[0]!;
    // JSON has no NaN: JSON.stringify sends null, which is no number.
    await assert.rejects(e.call('generate', { ...r.params, temperature: NaN } as never), /params\.temperature: must be a number, got null/);
    await assert.rejects(e.call('generate', { ...r.params, maxTokens: -5 } as never), /params\.maxTokens: must be at least 1, got -5/);
    await assert.rejects(
      e.call('generate', { ...r.params, prompts: [[256, 9999]] } as never),
      /params\.prompts\[0\]\[1\]: token id 9999 is outside the vocabulary \[0, 264\)/,
    );
    await assert.rejects(e.call('score', { pairs: [{ promptIds: [1], completionIds: [2] }], adapter: 'nobody' }), /no adapter "nobody"/);
    await assert.rejects(
      e.call('generate', { ...r.params, prompts: [Array(200).fill(65)] } as never),
      /a prompt of 200 tokens leaves no room in the context of 128/,
    );
    await stillServes(e);
  });
});
