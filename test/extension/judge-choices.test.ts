/**
 * Train This Agent's LLM judge without VS Code (#41 item 5): when it is offered (an agent that emits no reward, by its
 * rollouts or its code, or one trained with a judge before), the rubric file written from the shipped template, and
 * the `agl train` command line a choice with a judge becomes, read back by agl train's own flag parser into the
 * judge: settings it trains with.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { readFlags } from '../../daemon/commands/flags.js';
import { resolveTrainConfig } from '../../daemon/algorithm/config.js';
import {
  judgeTrainFlags,
  judgeOfferReason,
  renderRubric,
  rubricFileOf,
  rubricTemplatePath,
  rubricText,
  type JudgeChoice,
} from '../../extension/judge-choices.js';
import { trainArgs } from '../../extension/train-choices.js';
import { describeHeadline, type HeadlineFacts } from '../../protocol/agent-headline.js';
import type { AgentStats } from '../../protocol/lsp.js';
import { agentReward } from '../../protocol/reward-source.js';
import type { TrainingRun } from '../../protocol/store.js';
import { configOverrides, TRAIN_COMMAND, TRAIN_OPTIONS } from '../../protocol/train-options.js';

const NO_FACTS: HeadlineFacts = { rollouts: 0, rolloutsCapped: false, heldOut: null, recent: null };

function run(id: string, createdAt: number, config: Record<string, unknown>): TrainingRun {
  return {
    id,
    agent: 'a',
    kind: 'train',
    status: 'succeeded',
    config,
    step: 2,
    totalSteps: 2,
    checkpointDir: null,
    summary: {},
    createdAt,
    updatedAt: createdAt,
  };
}

/** An agent's stats as the language server gives them: its headline from `facts`, its reward source from its runs. */
function stats(facts: Partial<HeadlineFacts>, runs: TrainingRun[] = []): AgentStats {
  const headline = describeHeadline({ ...NO_FACTS, ...facts });
  return {
    agent: 'a',
    rollouts: headline.rollouts,
    rolloutsCapped: false,
    headline,
    active: 0,
    optimizations: [],
    evals: [],
    promoted: [],
    reward: agentReward(runs, headline),
  };
}

const JUDGE: JudgeChoice = { url: 'https://judge.example.com/v1', model: 'judge-model', keyEnv: 'OPENAI_API_KEY', rubric: '/w/agents/rubric.md' };
const REWARDED = 'export const a = rollout(async (t, llm) => { emitReward(1); });';
const NO_REWARD_CODE = 'export const a = rollout(async (t, llm) => (await llm.chat(t.q)).text);';

test('a judge is offered for an agent whose rollouts carry no reward, whose code names none, or that trained with one', () => {
  const rewarded = stats({ rollouts: 5, recent: { mode: 'train', count: 5, mean: 0.4 } });
  assert.equal(judgeOfferReason({ stats: rewarded, source: REWARDED, lastJudge: undefined }), null, 'an agent with a reward of its own trains on it');
  assert.equal(judgeOfferReason({ stats: undefined, source: REWARDED, lastJudge: undefined }), null, 'the language server silent: the code decides');
  assert.equal(judgeOfferReason({ stats: stats({ rollouts: 3 }), source: REWARDED, lastJudge: undefined }), 'none of its recent rollouts has a reward');
  for (const code of ['export const a = rollout(async (t: { p: string }) => (t.p.length > 0 ? 1 : 0));', 'rollout(async () => { return 0.5; });'])
    assert.equal(judgeOfferReason({ stats: stats({}), source: code, lastJudge: undefined }), null, `a bare-number reward: ${code}`);
  assert.equal(judgeOfferReason({ stats: stats({}), source: NO_REWARD_CODE, lastJudge: undefined }), 'its code never emits or returns a reward');
  assert.equal(
    judgeOfferReason({ stats: undefined, source: 'def solve(task, llm):\n    return llm.chat(task)\n', lastJudge: undefined }),
    'its code never emits or returns a reward',
  );
  assert.equal(judgeOfferReason({ stats: undefined, source: 'def solve(task, llm):\n    emit_reward(0.5)\n', lastJudge: undefined }), null, 'Python');
  assert.equal(judgeOfferReason({ stats: rewarded, source: REWARDED, lastJudge: JUDGE }), 'you trained it with a judge last time');
  // Once trained with a judge its rollouts carry the judge's rewards, and its code still names none: still offered.
  const judged = stats({ rollouts: 40, recent: { mode: 'train', count: 16, mean: 0.7 } }, [
    run('r1', 1, {}),
    run('r2', 2, { judge: { model: 'j', weight: null } }),
  ]);
  assert.equal(judgeOfferReason({ stats: judged, source: REWARDED, lastJudge: undefined }), 'its last training run (r2) had a judge');
  const both = stats({ rollouts: 40 }, [run('r3', 3, { judge: { model: 'j', weight: 0.5 } })]);
  assert.equal(judgeOfferReason({ stats: both, source: REWARDED, lastJudge: undefined }), 'its last training run (r3) had a judge');
  assert.equal(
    judgeOfferReason({ stats: stats({ rollouts: 4 }, [run('r4', 4, { judge: null })]), source: REWARDED, lastJudge: undefined }),
    null,
    'a run without one',
  );
});

test('the rubric file: next to the agent, from the shipped template with the agent named, nothing left to fill in', () => {
  assert.equal(rubricFileOf('/w/agents/support.ts'), join('/w/agents', 'rubric.md'));
  const template = rubricTemplatePath(resolve('.'));
  // The bundle's copy when one was built (npm test builds it before this file runs), else the sources': the same text.
  const bundled = resolve('dist/templates/rubric.md');
  assert.equal(template, existsSync(bundled) ? bundled : resolve('extension/templates/rubric.md'));
  assert.equal(readFileSync(template, 'utf8'), readFileSync(resolve('extension/templates/rubric.md'), 'utf8'), 'the shipped template');
  assert.match(readFileSync(template, 'utf8'), /\{\{agent\}\}/);
  const text = rubricText(resolve('.'), 'supportAgent');
  assert.match(text, /^# How to judge supportAgent$/m);
  assert.doesNotMatch(text, /\{\{|\}\}/);
  assert.equal(renderRubric('{{agent}} and {{agent}}', 'x'), 'x and x');
});

test("a choice with a judge becomes agl train's --judge-* flags, which agl train reads into its judge: settings", () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-judge-choice-'));
  try {
    const rubric = join(dir, 'rubric.md');
    writeFileSync(rubric, rubricText(resolve('.'), 'a'));
    const choice = { train: 't.jsonl', val: 'v.jsonl', budget: 'smoke', model: 'builtin:0.8m', judge: { ...JUDGE, rubric } };
    const args = trainArgs('agents/a.ts#a', choice, { groupSize: 4, storeUrl: '' }, 'budget.yaml', {});
    const at = args.indexOf('--judge-url');
    assert.deepEqual(args.slice(at), ['--judge-url', JUDGE.url, '--judge-model', JUDGE.model, '--judge-rubric', rubric, '--judge-key-env', 'OPENAI_API_KEY']);
    const flags = readFlags(TRAIN_COMMAND, args.slice(1)).values;
    const config = resolveTrainConfig(null, configOverrides(TRAIN_OPTIONS, flags));
    assert.equal(config.judge?.url, JUDGE.url);
    assert.equal(config.judge?.model, JUDGE.model);
    assert.deepEqual(config.judge?.rubric, { file: rubric });
    assert.equal(config.judge?.keyEnv, 'OPENAI_API_KEY');
    assert.equal(config.judge?.weight, null, "the judge's score is the reward: the agent has none of its own");
    assert.equal(config.judge?.mode, 'group');
    assert.ok(!trainArgs('agents/a.ts#a', { ...choice, judge: undefined }, { groupSize: 4, storeUrl: '' }, null, {}).some((a) => a.startsWith('--judge')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the judge's key: its variable when set, or for a remote server (agl train then names it); a local server without one gets none", () => {
  const local = { ...JUDGE, url: 'http://127.0.0.1:11434/v1' };
  assert.equal(judgeTrainFlags(local, {})['judge-key-env'], undefined);
  assert.equal(judgeTrainFlags({ ...local, url: 'http://localhost:8000/v1' }, {})['judge-key-env'], undefined);
  assert.equal(judgeTrainFlags(local, { OPENAI_API_KEY: 'sk-x' })['judge-key-env'], 'OPENAI_API_KEY');
  assert.equal(judgeTrainFlags(JUDGE, {})['judge-key-env'], 'OPENAI_API_KEY');
  assert.equal(judgeTrainFlags({ ...JUDGE, keyEnv: 'JUDGE_KEY' }, { JUDGE_KEY: 'k' })['judge-key-env'], 'JUDGE_KEY');
});
