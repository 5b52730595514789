/**
 * The sql and rag warm-up demonstrations come from problems of their own: the shipped data/demos.jsonl is
 * what the generator makes, and no demonstration shows a train/val/test question (nor, for sql, a gold
 * query; for rag, a held-out question's answer next to its question). The demonstrators are imperfect by
 * design (both behaviours present in the shares the generators document), so RL has something to learn.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type Demonstration, readJsonl } from '../../daemon/algorithm/sft-trainer.js';
import { makeRagSplits, makeWorld } from '../../samples/rag/corpus.js';
import { ANSWER_INSTRUCTIONS, QUERY_INSTRUCTIONS } from '../../samples/rag/prompts.js';
import {
  COPY_DRILLS as RAG_DRILLS,
  DEMOS as RAG_DEMOS,
  DOC_DRILLS as RAG_DOC_DRILLS,
  warmupDemonstrations as ragDemos,
} from '../../samples/rag/warmup-demos.js';
import { companyRows, SCHEMA_LINE } from '../../samples/sql/db.js';
import { CHECKER_SYSTEM, makeSqlSplits } from '../../samples/sql/task.js';
import { COPY_DRILLS, DEMOS, dropFilter, warmupDemonstrations as sqlDemos } from '../../samples/sql/warmup-demos.js';

type Chat = { messages: { role: string; content: string }[] };
const user = (d: Chat) => d.messages.find((m) => m.role === 'user')!.content;
const reply = (d: Chat) => d.messages.at(-1)!.content;
const system = (d: Chat) => d.messages[0].content;

for (const [file, set] of [
  ['demos.jsonl', DEMOS],
  ['demos-copy.jsonl', COPY_DRILLS],
] as const)
  describe(`sql warm-up demonstrations (${file})`, () => {
    const splits = makeSqlSplits(companyRows());
    const held = [...splits.train, ...splits.val, ...splits.test];
    const demos = sqlDemos(held, set);

    it(`are the shipped data/${file}`, () => {
      assert.deepEqual(readJsonl<Demonstration>(join('samples', 'sql', 'data', file)), demos);
    });

    it('share no question and no gold query with train, val or test', () => {
      const questions = new Set(held.map((t) => t.question));
      const golds = new Set(held.map((t) => t.gold));
      const asked = demos.map((d) => user(d as Chat).split('\n')[0]);
      assert.equal(asked.filter((q) => questions.has(q)).length, 0);
      const written = demos.filter((d) => system(d as Chat) === SCHEMA_LINE || user(d as Chat).endsWith('Better SQL:')).map((d) => reply(d as Chat));
      assert.equal(written.filter((sql) => golds.has(sql)).length, 0);
      // No name, city or project of the sample's company appears in any demonstration.
      const rows = companyRows();
      const names = [...rows.emps.map((e) => e.name), ...rows.depts.map((d) => d.name), ...rows.depts.map((d) => d.city), ...rows.projs.map((p) => p.name)];
      const text = demos.map((d) => JSON.stringify(d)).join('\n');
      // (A longer invented name cut by the result's `…` is not one of them.)
      assert.deepEqual(
        names.filter((n) => new RegExp(`\\b${n}\\b(?!…)`).test(text)),
        [],
      );
    });

    it('hold both writer behaviours, checker verdicts and repairs', () => {
      const writer = demos.filter((d) => system(d as Chat) === SCHEMA_LINE);
      assert.ok(writer.length >= 300, `${writer.length} problems`);
      const shortcuts = writer.filter((d) => !/ WHERE /.test(reply(d as Chat))).length;
      const share = shortcuts / writer.length;
      assert.ok(share > 0.38 && share < 0.52, `shortcut share ${share.toFixed(2)} (designed 0.45)`);
      assert.ok(writer.every((d) => !/ WHERE /.test(reply(d as Chat)) || dropFilter(reply(d as Chat)) !== reply(d as Chat)));
      const gold = writer.filter((d) => / WHERE /.test(reply(d as Chat)) && !/ FROM (emps|depts|projs)\b/.test(reply(d as Chat))).length / writer.length;
      assert.ok(gold > 0.28 && gold < 0.42, `gold share ${gold.toFixed(2)} (designed 0.35)`);
      const verdicts = demos.filter((d) => system(d as Chat) === CHECKER_SYSTEM).map((d) => reply(d as Chat));
      assert.ok(verdicts.includes('yes') && verdicts.includes('no'));
      assert.ok(demos.some((d) => user(d as Chat).endsWith('Better SQL:')));
    });

    it(`ask about ${set.companies} companies whose names are ${set.style}`, () => {
      const writer = demos.filter((d) => system(d as Chat) === SCHEMA_LINE);
      const named = writer.map((d) => /name='([^']+)'/.exec(reply(d as Chat))?.[1]).filter((n): n is string => n !== undefined);
      assert.ok(named.length > 50);
      const syllabic =
        named.filter((n) => /^([bdfghklmnprstvz]|br|dr|kl|st|tr)(a|e|i|o|u|ai|ea|io)(([bdfghklmnprstvz]|br|dr|kl|st|tr)(a|e|i|o|u|ai|ea|io)){1,2}$/i.test(n))
          .length / named.length;
      if (set.style === 'syllables') assert.equal(syllabic, 1);
      else assert.ok(syllabic < 0.05, `${(syllabic * 100).toFixed(0)}% of the drills' names look like syllables`);
      if (set.perCompany !== undefined) assert.ok(writer.length <= set.companies * set.perCompany && writer.length > set.companies * set.perCompany * 0.95);
    });
  });

for (const [file, set] of [
  ['demos.jsonl', RAG_DEMOS],
  ['demos-copy.jsonl', RAG_DRILLS],
  ['demos-doc.jsonl', RAG_DOC_DRILLS],
] as const)
  describe(`rag warm-up demonstrations (${file})`, () => {
    const splits = makeRagSplits(makeWorld());
    const held = [...splits.train, ...splits.val, ...splits.test];
    const drills = set.style === 'letters';
    const docOnly = set.documentCallsOnly;
    const demos = ragDemos(held, set);

    it(`are the shipped data/${file}`, () => {
      assert.deepEqual(readJsonl<Demonstration>(join('samples', 'rag', 'data', file)), demos);
    });

    it(drills ? "name their entities in random letters, none in the sample world's syllables" : "name their entities in the sample world's syllables", () => {
      // The question's entity: hop 1's reply, or for the document drills (no hop 1) the title the first found document starts with.
      const firstQueries = docOnly
        ? demos.filter((d) => system(d as Chat) === QUERY_INSTRUCTIONS).map((d) => /\nKnown: (?:The )?([A-Z][a-z]+(?: [A-Z][a-z]+)?)/.exec(user(d as Chat))![1])
        : demos.filter((d) => system(d as Chat) === QUERY_INSTRUCTIONS && !user(d as Chat).includes('\nKnown: ')).map((d) => reply(d as Chat));
      assert.ok(firstQueries.length > 100);
      const syllabic =
        firstQueries.filter((q) =>
          /^(the )?(ka|lo|mir|ven|tor|sa|bel|du|rin|os|fa|gel|ith|mo|zan|pe|quor|ul|ny|drea)+( (ka|lo|mir|ven|tor|sa|bel|du|rin|os|fa|gel|ith|mo|zan|pe|quor|ul|ny|drea)+)?( guild)?$/i.test(
            q,
          ),
        ).length / firstQueries.length;
      if (drills) assert.ok(syllabic < 0.02, `${(syllabic * 100).toFixed(0)}% syllable names`);
      else assert.equal(syllabic, 1);
    });

    it('share no question with train, val or test', () => {
      const questions = new Set(held.map((t) => t.question));
      const asked = demos.map((d) =>
        user(d as Chat)
          .split('\n')
          .find((l) => l.endsWith('?'))!,
      );
      assert.equal(asked.length, demos.length);
      assert.equal(asked.filter((q) => questions.has(q)).length, 0);
    });

    const share = set.bridgeShare;
    it(`follow the bridge on ${share * 100}% of the second hops; only then is the answer shown${docOnly ? '; no first hops' : ''}`, () => {
      const queries = demos.filter((d) => system(d as Chat) === QUERY_INSTRUCTIONS);
      const second = queries.filter((d) => user(d as Chat).includes('\nKnown: '));
      assert.equal(second.length * (docOnly ? 1 : 2), queries.length);
      // A second query repeats hop 1 when it names the entity of the question's first document: hop 1's reply, which the document begins with.
      const firstOf = new Map(queries.filter((q) => !user(q as Chat).includes('\nKnown: ')).map((q) => [user(q as Chat), reply(q as Chat)]));
      const repeated = (d: Chat) =>
        docOnly
          ? new RegExp(`^Known: (The )?${reply(d).replace(/^The /, '')}\\b`).test(user(d).split('\n')[1]!)
          : reply(d) === firstOf.get(user(d).split('\n')[0]);
      const lazy = second.filter((d) => repeated(d as Chat)).length / second.length;
      assert.ok(Math.abs(lazy - (1 - share)) < 0.08, `repeated second queries ${lazy.toFixed(2)} (designed ${1 - share})`);
      const answers = demos.filter((d) => system(d as Chat) === ANSWER_INSTRUCTIONS).map((d) => reply(d as Chat));
      assert.equal(answers.length, second.length);
      const unknown = answers.filter((a) => a === 'unknown').length / answers.length;
      assert.ok(Math.abs(unknown - (1 - share)) < 0.15, `unknown answers ${unknown.toFixed(2)}`);
    });
  });
