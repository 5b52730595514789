/**
 * The sql sample: its database, dataset and execution-match reward on their own, then one rollout of the
 * LangChain.js agent through a real daemon and runner (gateway in upstream mode, pointed at a scripted LLM
 * that plays each agent's part): the three agents' calls are recorded under their names, the query tool
 * span and the reward are stored, and the adapter keeps only writer and rewriter calls when asked to.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AGL, SPAN } from '../../protocol/spans.js';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { companyRows, openCompanyDb, SCHEMA_LINE } from '../../samples/sql/db.js';
import { executionReward, formatResult, runQuery } from '../../samples/sql/execute.js';
import { checkerAccepts, extractSql, makeSqlSplits } from '../../samples/sql/task.js';
import { evaluateWithEnv } from '../../samples/sql/evaluate.js';
import { type SampleDaemon, startSampleDaemon } from './sample-daemon.js';
import { contentText, startScriptedLlm } from './scripted-llm.js';

describe('sql sample: data and reward', () => {
  const db = openCompanyDb();
  after(() => db.close());

  it('scores by execution: same rows in any order and any column names match; anything else does not', () => {
    const gold = "SELECT name FROM emp WHERE dept='Sales'";
    assert.equal(executionReward(db, gold, gold), 1);
    assert.equal(executionReward(db, "SELECT e.name AS who FROM emp e WHERE e.dept = 'Sales' ORDER BY name DESC", gold), 1);
    assert.equal(executionReward(db, "SELECT name FROM emp WHERE dept='Legal'", gold), 0);
    assert.equal(executionReward(db, "SELECT name, pay FROM emp WHERE dept='Sales'", gold), 0, 'extra column');
    assert.equal(executionReward(db, 'SELEC name FROM emp', gold), 0, 'syntax error');
    assert.equal(executionReward(db, '', gold), 0);
  });

  it('never runs writes or several statements, and reports why', () => {
    assert.match(runQuery(db, "DELETE FROM emp WHERE name='Ada'").error ?? '', /only SELECT|readonly/i);
    assert.match(runQuery(db, 'SELECT 1; SELECT 2').error ?? '', /one statement|more than one/i);
    assert.match(runQuery(db, 'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT COUNT(*) FROM n').error ?? '', /recursive/);
    assert.equal(runQuery(db, "SELECT COUNT(*) FROM emp WHERE name='Ada'").rows[0][0], 1, 'the delete did not happen');
  });

  it('makes the same splits from the same seed, with no question shared and every gold query non-empty', () => {
    const a = makeSqlSplits(companyRows()),
      b = makeSqlSplits(companyRows());
    assert.deepEqual(a, b);
    const qs = [...a.train, ...a.val, ...a.test].map((t) => t.question);
    assert.equal(new Set(qs).size, qs.length);
    for (const t of [...a.val, ...a.test]) assert.ok(runQuery(db, t.gold).rows.length > 0, t.gold);
  });

  it('reads the SQL out of fenced or chatty replies and the checker verdict out of its reply', () => {
    assert.equal(extractSql('Sure:\n```sql\nSELECT name\nFROM emp;\n```'), 'SELECT name FROM emp');
    assert.equal(extractSql("The query is SELECT pay FROM emp WHERE name='Ada'; done"), "SELECT pay FROM emp WHERE name='Ada'");
    assert.equal(checkerAccepts('yes'), true);
    assert.equal(checkerAccepts('The query is correct.'), true);
    assert.equal(checkerAccepts('no, it is incorrect'), false);
    assert.equal(checkerAccepts('no'), false);
  });

  it('renders results short, numbers rounded, errors named', () => {
    assert.equal(formatResult(runQuery(db, 'SELECT 1.23456, 2')), '1.23|2');
    assert.match(formatResult(runQuery(db, 'SELECT nope FROM emp')), /^error: no such column: nope/);
  });
});

describe('sql sample: one rollout through the daemon', () => {
  const agent = `${resolve('samples/sql/agent.ts')}#sqlAgent`; // tests run from the repo root
  const task = { id: 't-1', question: 'How many employees are in Sales?', gold: "SELECT COUNT(*) FROM emp WHERE dept='Sales'" };
  let env: SampleDaemon;

  before(async () => {
    // The writer forgets the filter, the checker rejects it, the rewriter fixes it, the checker accepts.
    env = await startSampleDaemon((body) => {
      const messages = body.messages ?? [];
      const last = contentText(messages.at(-1)?.content);
      if (contentText(messages[0]?.content) === SCHEMA_LINE) return '```sql\nSELECT COUNT(*) FROM emp\n```';
      if (last.endsWith('Correct?')) return last.includes('WHERE') ? 'yes' : 'no';
      if (last.endsWith('Better SQL:')) return task.gold;
      return 'unexpected prompt';
    });
  });
  after(() => env.close());

  it('records writer, checker and rewriter calls by name, the query tool spans, and reward 1', async () => {
    const r = await env.runToEnd(task, agent);
    const [attempt] = await env.daemon.client.getAttempts(r.id);
    assert.equal(r.status, 'succeeded', attempt.error?.message);
    const spans = await env.daemon.client.querySpans({ rolloutId: r.id });
    const calls = spans.filter((s) => s.name === SPAN.llmCall).sort((a, b) => a.startTime - b.startTime);
    assert.equal(calls.length, 4, 'writer, checker (no), rewriter, checker (yes)');
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const agentOf = (s: (typeof calls)[number]) => byId.get(s.parentSpanId ?? '')?.attributes[AGL.agentName];
    assert.deepEqual(calls.map(agentOf), ['writer', 'checker', 'rewriter', 'checker']);
    const tools = spans.filter((s) => s.name === SPAN.tool);
    assert.deepEqual(
      tools.map((s) => s.attributes['sql.query']),
      ['SELECT COUNT(*) FROM emp', task.gold],
    );
    const final = spans.find((s) => s.name === SPAN.reward && s.attributes['agl.reward.final'] === true);
    assert.equal(final?.attributes[AGL.rewardValue], 1);
    assert.equal(env.llm.requests.length, 4);

    const trajectory = spansToTrajectory(spans, { agentMatch: '^(writer|rewriter)$' });
    assert.deepEqual(
      trajectory.steps.map((s) => s.agentName),
      ['writer', 'rewriter'],
      'selective optimization keeps writer and rewriter',
    );
    assert.equal(trajectory.skipped.filter((s) => s.reason === 'agent-filtered').length, 2, 'the checker calls are left out');
  });

  it('a wrong final query earns reward 0 and a malformed task fails the attempt with a message', async () => {
    const wrong = await env.runToEnd({ ...task, gold: "SELECT COUNT(*) FROM emp WHERE dept='Legal'" }, agent);
    const spans = await env.daemon.client.querySpans({ rolloutId: wrong.id });
    assert.equal(spans.find((s) => s.name === SPAN.reward)?.attributes[AGL.rewardValue], 0);
    const bad = await env.runToEnd({ question: 'no gold here' }, agent);
    assert.equal(bad.status, 'failed');
    const [attempt] = await env.daemon.client.getAttempts(bad.id);
    assert.match(attempt.error?.message ?? '', /expected \{"question": string, "gold": string/);
  });
});

describe('sql sample: pointed at an upstream model with environment variables only', () => {
  it('evaluates the agent on a split against OPENAI_BASE_URL / OPENAI_API_KEY / AGL_MODEL, no daemon', async () => {
    const tasks = readFileSync('samples/sql/data/test.jsonl', 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, 3)
      .map((l) => JSON.parse(l) as { question: string; gold: string });
    // A perfect writer for the first two questions, a wrong one for the third; the checker accepts anything.
    const llm = await startScriptedLlm((body) => {
      const last = contentText(body.messages?.at(-1)?.content);
      if (last.endsWith('Correct?')) return 'yes';
      const t = tasks.findIndex((x) => x.question === last);
      return t >= 0 && t < 2 ? tasks[t].gold : 'SELECT 0';
    });
    const saved = { ...process.env };
    Object.assign(process.env, { OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'sk-test', AGL_MODEL: 'upstream-model' });
    try {
      const lines: string[] = [];
      const mean = await evaluateWithEnv('samples/sql/agent.ts#sqlAgent', 'samples/sql/data/test.jsonl', 3, (l) => lines.push(l));
      assert.equal(mean, 2 / 3);
      assert.equal(lines.length, 3);
      assert.ok(llm.requests.every((b) => b.model === 'upstream-model'));
    } finally {
      for (const k of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'AGL_MODEL']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await llm.close();
    }
  });
});
