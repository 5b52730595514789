/**
 * The engine protocol declared once on each side: protocol/engine.ts's request schemas (zod, what the daemon sends)
 * and engines/torch/agl_torch/messages.py's typed records (what the torch engine parses) name the same fields, with the
 * same types and the same required keys. A field added, renamed or retyped on one side only fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { EngineParamsSchemas } from '../../protocol/engine.js';
import { runPython } from '../helpers/torch.js';

type Fields = Record<string, { required: boolean; type: string }>;
type Json = { [k: string]: unknown };

/** Which Python record each object of the TypeScript schemas is (by its path). */
const RECORDS: Record<string, string> = {
  generate: 'GenerateParams',
  score: 'ScoreParams',
  'score.pairs[]': 'Pair',
  train_step: 'TrainStepParams',
  'train_step.pairs[]': 'Pair',
  'train_step.loss<nll>': 'NllLoss',
  'train_step.loss<grpo>': 'GrpoLoss',
  'train_step.loss<grpo>.samples[]': 'GrpoSample',
  'train_step.optimizer': 'OptimizerSettings',
  save: 'SaveParams',
  add_adapter: 'AddAdapterParams',
  'add_adapter.lora': 'LoraSettings',
  'add_adapter.optimizer': 'OptimizerSettings',
  shutdown: 'Empty',
};

function typeName(s: Json, path: string): string {
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (union) {
    const nonNull = union.filter((u) => u.type !== 'null');
    const names = nonNull.map((u, i) => typeName(u, `${path}#${i}`)).sort();
    return names.join('|') + (nonNull.length < union.length ? '|null' : '');
  }
  if (Array.isArray(s.type)) {
    const types = s.type as string[];
    return typeName({ ...s, type: types.find((t) => t !== 'null') }, path) + (types.includes('null') ? '|null' : '');
  }
  if ('const' in s || 'enum' in s) return 'enum';
  if (s.type === 'array') return `array<${typeName(s.items as Json, `${path}[]`)}>`;
  if (s.type === 'object') return s.properties ? 'object' : 'record';
  return String(s.type);
}

/** Every object of a schema (with its path), as {field: {required, type}}. */
function objects(s: Json, path: string, out: Map<string, Fields>): void {
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (union) {
    for (const u of union) {
      const kind = (u.properties as Json | undefined)?.kind as Json | undefined;
      if (u.type !== 'null') objects(u, kind && 'const' in kind ? `${path}<${String(kind.const)}>` : path, out);
    }
    return;
  }
  if (s.type === 'array') return objects(s.items as Json, `${path}[]`, out);
  if (s.type !== 'object' || !s.properties) return;
  const required = new Set((s.required as string[] | undefined) ?? []);
  const fields: Fields = {};
  for (const [k, v] of Object.entries(s.properties as Record<string, Json>)) {
    fields[k] = { required: required.has(k), type: typeName(v, `${path}.${k}`) };
    objects(v, `${path}.${k}`, out);
  }
  out.set(path, fields);
}

/** An optional field is absent or null on the wire alike: nullability is compared only where the key is required. */
function normalize(f: Fields): Fields {
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [k, { required: v.required, type: v.required ? v.type : v.type.replace(/\|null$/, '') }]));
}

test('every engine request has the same fields, types and required keys in protocol/engine.ts and messages.py', () => {
  const python = runPython<Record<string, Fields>>(['-c', 'import json; from agl_torch.messages import wire_table; print(json.dumps(wire_table()))']);
  const ts = new Map<string, Fields>();
  for (const [method, schema] of Object.entries(EngineParamsSchemas)) {
    objects(z.toJSONSchema(schema, { io: 'input' }) as Json, method, ts);
  }
  assert.deepEqual([...ts.keys()].sort(), Object.keys(RECORDS).sort(), 'every object of the TypeScript schemas has its Python record');
  for (const [path, record] of Object.entries(RECORDS)) {
    assert.ok(python[record], `messages.py has a record ${record}`);
    assert.deepEqual(normalize(ts.get(path)!), normalize(python[record]!), `${path} (TypeScript) vs ${record} (Python)`);
  }
});
