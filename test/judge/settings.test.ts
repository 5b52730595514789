/**
 * The judge's settings (protocol/judge-settings.ts): train.yaml's `judge:` and `agl train`'s --judge-* flags from one
 * declaration, each flag into its config path; the rubric file found from where it was given (the config's folder, or
 * the working directory for the flag) and recorded absolute; errors that name the field; the key read from
 * judge.keyEnv; and the guard: a judge that is the policy being trained is refused with the reason, unless allowed.
 * Also: three steps in a row whose every group the judge could not score stop the run.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parseTrainConfig, resolveTrainConfig } from '../../daemon/algorithm/config.js';
import { FailedSteps } from '../../daemon/algorithm/diagnosis.js';
import { resolveRubricFile } from '../../daemon/algorithm/run-plan.js';
import { checkNotSelfJudge, judgeKey, rubricText, selfJudgeReason } from '../../daemon/judge/open-judge.js';
import { configOverrides, TRAIN_OPTIONS, trainHelp } from '../../protocol/train-options.js';

const JUDGE = { url: 'https://api.example.com/v1', model: 'gpt-4.1-mini', rubric: 'Is the answer right?' };

describe("the judge's settings", () => {
  it('train.yaml judge: fills in every default; url, model and rubric are required, and a bad value names its field', () => {
    const c = parseTrainConfig({ judge: JUDGE });
    assert.deepEqual(
      {
        ...{ mode: c.judge!.mode, weight: c.judge!.weight, validation: c.judge!.validation, retries: c.judge!.retries, allow: c.judge!.allowSelfJudge },
        ...{ retest: c.judge!.retest, minReliability: c.judge!.minReliability },
      },
      { mode: 'group', weight: null, validation: 'auto', retries: 3, allow: false, retest: true, minReliability: 0 },
    );
    assert.throws(() => parseTrainConfig({ judge: { ...JUDGE, minReliability: 1.5 } }), /judge\.minReliability/);
    assert.equal(parseTrainConfig({}).judge, null);
    assert.throws(() => parseTrainConfig({ judge: { url: JUDGE.url, model: 'm' } }), /judge\.rubric/);
    assert.throws(() => parseTrainConfig({ judge: { ...JUDGE, mode: 'pairs' } }), /judge\.mode/);
    assert.throws(() => parseTrainConfig({ judge: { ...JUDGE, keyEnv: 'not a name' } }), /judge\.keyEnv: an environment variable name/);
    assert.throws(() => parseTrainConfig({ judge: { ...JUDGE, weigth: 1 } }), /judge.*weigth/);
  });

  it('each --judge-* flag sets its config path, read as its field says; --allow-self-judge is a switch', () => {
    const o = configOverrides(TRAIN_OPTIONS, {
      'judge-url': JUDGE.url,
      'judge-model': 'm',
      'judge-rubric': 'rubric.md',
      'judge-mode': 'single',
      'judge-weight': '0.5',
      'judge-price-in': 'null',
      'judge-show-expected': 'true',
      'judge-retries': '5',
      'judge-retest': 'false',
      'judge-min-reliability': '0.5',
      'allow-self-judge': true,
    });
    assert.deepEqual(o.judge, {
      url: JUDGE.url,
      model: 'm',
      rubric: { file: 'rubric.md' },
      mode: 'single',
      weight: 0.5,
      priceIn: null,
      showExpected: true,
      retries: 5,
      retest: false,
      minReliability: 0.5,
      allowSelfJudge: true,
    });
    assert.throws(() => configOverrides(TRAIN_OPTIONS, { 'judge-retries': 'many' }), /--judge-retries must be a non-negative number/);
    assert.match(trainHelp(), /--judge-mode group\|single\s+judge: group: one call per task group/);
    assert.match(trainHelp(), /--allow-self-judge\s+let the judge be the policy being trained/);
  });

  it("a rubric file is found from the config's folder (train.yaml) or the working directory (the flag), and kept absolute", () => {
    const dir = mkdtempSync(join(tmpdir(), 'agl-judge-cfg-'));
    mkdirSync(join(dir, 'agent'));
    writeFileSync(join(dir, 'agent', 'train.yaml'), `judge:\n  url: ${JUDGE.url}\n  model: m\n  rubric: { file: rubric.md }\n`);
    writeFileSync(join(dir, 'agent', 'rubric.md'), 'Right answers score 1.');
    const file = join(dir, 'agent', 'train.yaml');
    const fromFile = resolveTrainConfig(file);
    resolveRubricFile(fromFile, file, {});
    assert.deepEqual(fromFile.judge!.rubric, { file: join(dir, 'agent', 'rubric.md') });
    assert.equal(rubricText(fromFile.judge!), 'Right answers score 1.');
    const flags = { judge: { rubric: { file: 'other.md' } } };
    const fromFlag = resolveTrainConfig(file, flags);
    resolveRubricFile(fromFlag, file, flags);
    assert.deepEqual(fromFlag.judge!.rubric, { file: resolve('other.md') });
    assert.throws(() => rubricText(fromFlag.judge!), /judge\.rubric: cannot read .*other\.md/);
  });

  it('the key comes from judge.keyEnv; a variable named but not set is an error naming it', () => {
    assert.equal(judgeKey({ keyEnv: null }, {}), '');
    assert.equal(judgeKey({ keyEnv: 'JUDGE_KEY' }, { JUDGE_KEY: 'sk-1' }), 'sk-1');
    assert.throws(() => judgeKey({ keyEnv: 'JUDGE_KEY' }, {}), /judge\.keyEnv names JUDGE_KEY, which is not set here/);
  });
});

describe('the guard against a policy judging itself', () => {
  const trained = { endpoint: 'http://127.0.0.1:41234/v1', sampler: { url: 'http://gpu-box:8000/v1', model: 'policy' }, names: ['policy', 'warmup'] };

  it("refuses the run's own gateway (any loopback name), its sampler, and a trained policy's name, saying which", () => {
    assert.match(selfJudgeReason({ url: 'http://localhost:41234/v1', model: 'x' }, trained)!, /this run's own gateway/);
    assert.match(selfJudgeReason({ url: 'http://gpu-box:8000/v1', model: 'x' }, trained)!, /the run's sampler/);
    assert.match(selfJudgeReason({ url: JUDGE.url, model: 'warmup' }, trained)!, /judge\.model 'warmup' is the name this run serves a trained policy under/);
    assert.equal(selfJudgeReason({ url: JUDGE.url, model: 'gpt-4.1-mini' }, trained), null);
    assert.equal(selfJudgeReason({ url: 'http://localhost:41235/v1', model: 'x' }, trained), null, 'another port is another server');
  });

  it('refused with the reason and the way out, unless allowSelfJudge', () => {
    assert.throws(
      () => checkNotSelfJudge({ url: JUDGE.url, model: 'policy', allowSelfJudge: false }, trained),
      /the judge may not be the policy being trained: judge\.model 'policy'.*a policy that grades itself learns to please itself.*--allow-self-judge/,
    );
    assert.match(checkNotSelfJudge({ url: JUDGE.url, model: 'policy', allowSelfJudge: true }, trained)!, /judge\.model 'policy'/);
  });
});

describe('a judge that can score nothing stops the run', () => {
  it('three steps in a row whose every group it could not score end training with its reason', () => {
    const log: string[] = [];
    const steps = new FailedSteps((m) => log.push(m));
    const none = { scored: 0, failed: 4, reason: '503 upstream down (after 4 tries)' };
    steps.note(0, [], none);
    steps.note(1, [], { scored: 3, failed: 1, reason: 'x' });
    steps.note(2, [], none);
    steps.note(3, [], none);
    assert.throws(() => steps.note(4, [], none), /the LLM judge could not score any group in the last 3 steps, e\.g\.: 503 upstream down/);
    assert.match(log[0]!, /step 1: the judge could not score any of its 4 groups/);
  });
});
