/**
 * `agl judge check` (daemon/judge/check.ts) catches the zoo's biased judges (test/helpers/model-zoo.ts): on a run whose
 * validation answered a task right and later wrong at length in the zoo's own voice, a judge with a bias for longer
 * answers, or for its own family's outputs, reverses the agent's ranking, and the check says so (pairwise accuracy 0,
 * the pair named with the judge's words) where the plain zoo judge agrees (1). Nothing the product can fix by reading:
 * the check against a reward you trust is how a biased judge is found before it trains anything.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { type ModelZoo, startModelZoo, ZOO_SIGNATURE } from '../helpers/model-zoo.js';
import { storedRollout } from './stored-rollouts.js';

describe('agl judge check on the zoo', () => {
  let dataDir: string;
  let zoo: ModelZoo;
  let runId: string;
  const rubric = 'Right totals score 1.\n- Ann has 23 pens => 38';
  const ann = { id: 'ann', input: { question: 'Ann has 23 pens, gets 15 more.', answer: 0 } };
  const longWrong = `40. ${ZOO_SIGNATURE}, I counted every pen twice and then once more, to be sure of the total.`;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'agl-judge-zoo-check-'));
    zoo = await startModelZoo();
    const store = new SqliteStore(join(dataDir, 'store.sqlite'));
    const config = parseTrainConfig({ judge: { url: zoo.url, model: 'judge', rubric } });
    runId = (await store.createTrainingRun({ agent: 'a.ts#agent', config, totalSteps: 5 })).id;
    await storedRollout(store, ann, { answer: '38', reward: 1 }, { mode: 'val', runId, step: 0 });
    await storedRollout(store, ann, { answer: longWrong, reward: 0 }, { mode: 'val', runId, step: 5 });
    await store.close();
  });
  after(() => zoo.close());

  /** The check's agreement and disagreements with the zoo's `model` as the judge. */
  async function check(model: string) {
    const { code, out } = await runAgl(['judge', 'check', runId, '--judge-model', model, '--json'], dataDir);
    assert.equal(code, 0, out);
    return JSON.parse(out.slice(out.indexOf('{'))) as {
      agreement: { pairs: number; pairwiseAccuracy: number };
      disagreements: { better: { explanation: string } }[];
    };
  }

  it('the plain judge agrees with the agent; one biased to longer answers or to its own family reverses it, and the check names the pair', async () => {
    const plain = await check('judge');
    assert.deepEqual([plain.agreement.pairs, plain.agreement.pairwiseAccuracy, plain.disagreements.length], [1, 1, 0]);
    for (const [model, why] of [
      ['judge+length', 'the most thorough answer'],
      ['judge+self', 'written the way I would write it'],
    ]) {
      const biased = await check(model!);
      assert.deepEqual([biased.agreement.pairs, biased.agreement.pairwiseAccuracy], [1, 0], model);
      assert.equal(biased.disagreements[0]?.better.explanation, why, model);
    }
  });
});
