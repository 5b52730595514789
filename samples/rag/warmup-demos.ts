/**
 * The rag warm-up's demonstrations, from problems of their own (as calc's): the same two-hop question
 * templates asked about DEMO_WORLDS other invented worlds (seeds DEMO_WORLD_SEED, +1, ...: other people,
 * towns, works and guilds, each world with its own corpus), so no demonstration question is one of
 * train/val/test and no held-out answer is ever shown. Names are new in every world, so the warm-up has
 * to learn to copy rather than memorise: the entity of the question into the first query, the bridge
 * entity of the found document into the second, and the answer from the documents.
 *
 * The demonstrator is imperfect on purpose, so RL has something to learn from the F1 reward alone (calc's
 * demonstrator answered 70% of problems in its head):
 *   - the first query is always the expert one (the entity the question names);
 *   - the second query follows the bridge (the entity the first document names) on BRIDGE_SHARE of the
 *     problems; on the others it searches the question's entity again, and the search (the agent's own,
 *     over the demo corpus, leaving out what was found) returns some other document;
 *   - the answerer answers from what was found: the gold answer when the second document holds it,
 *     else "unknown".
 * A model imitating this mostly repeats the first query (greedy: a low start) and follows the bridge on
 * about a third of the questions at temperature 1: groups hold both second queries, and only the bridge
 * pays, which GRPO can learn per hop.
 */
import { type Doc, makeCorpus, makeRagSplits, makeWorld, type NameStyle, type RagTask } from './corpus.js';
import { answerInput, ANSWER_INSTRUCTIONS, type Msg, QUERY_INSTRUCTIONS, queryFor, queryInput } from './prompts.js';
import { CorpusSearch } from './search.js';
import { rng } from '../shared/rng.js';

/** The demo worlds' seeds: DEMO_WORLD_SEED, +1, ... (the sample's world is makeWorld()'s default, 5). */
export const DEMO_WORLD_SEED = 105;
/** How many invented worlds the demonstrations ask about: names new in each, so copying is what is learned. */
export const DEMO_WORLDS = 5;
/** Share of the demonstrations whose second query follows the bridge entity. */
export const BRIDGE_SHARE = 0.3;

/**
 * One demonstration set: `n` problems per world about `worlds` invented worlds (seeds `seed`, +1, ...), names in
 * `style`; the demonstrator's second query follows the bridge on `bridgeShare` of the problems; with
 * `documentCallsOnly` only the calls that copy out of a found document are kept (the second query and the answer).
 */
export interface DemoSet {
  n: number;
  seed: number;
  worlds: number;
  style: NameStyle;
  bridgeShare: number;
  documentCallsOnly: boolean;
}

/** The first demonstrations (data/demos.jsonl). */
export const DEMOS: DemoSet = { n: 300, seed: DEMO_WORLD_SEED, worlds: DEMO_WORLDS, style: 'syllables', bridgeShare: BRIDGE_SHARE, documentCallsOnly: false };

/**
 * The copy drills (data/demos-copy.jsonl): the same templates and the same imperfect demonstrator, asked about
 * twenty more worlds whose names are random letters (150 problems each). As the sql sample measured, names drawn
 * from the same syllables as the sample's let the warm-up lower its loss by the syllables' look rather than by
 * copying; random letters leave copying (the question's entity, the bridge out of the found document, the
 * answer) as the only way.
 */
export const COPY_DRILLS: DemoSet = { ...DEMOS, n: 150, seed: 205, worlds: 20, style: 'letters' };

/**
 * The document drills (data/demos-doc.jsonl): twenty more random-letter worlds, only the two calls that copy out
 * of a found document (the second query and the answer; the first hop is already copied from the question on
 * most problems), and the bridge followed on half the second hops instead of 30%. Measured reason: after 1,800
 * steps of the copy drills hop 1 named the entity on 75% at temperature 1 but hop 2 copied the bridge exactly on
 * 1% and the answerer ran past the name's end (`"Belpeithththth"`): in the copy drills only a fifth of the
 * lines copy from a document. Half the second hops still repeat hop 1, so groups at temperature 1 hold both.
 */
export const DOC_DRILLS: DemoSet = { ...COPY_DRILLS, seed: 305, bridgeShare: 0.5, documentCallsOnly: true };

/** Two-hop problems about one demo world, with that world's corpus. */
export function demoProblems(n = 300, seed = DEMO_WORLD_SEED, style: NameStyle = 'syllables'): { tasks: RagTask[]; docs: Doc[] } {
  const world = makeWorld(seed, undefined, style);
  const tasks = makeRagSplits(world, seed + 1, { train: n, val: 0, test: 0 }).train.map((t, i) => ({ ...t, id: `demo-${seed}-${i}` }));
  return { tasks, docs: makeCorpus(world) };
}

const chat = (system: string, user: string, reply: string) => ({
  messages: [{ role: 'system', content: system } as Msg, { role: 'user', content: user } as Msg, { role: 'assistant', content: reply } as Msg],
});

/**
 * The demonstrations of one set (`set.n` problems per world) whose question is in none of
 * `heldApart` (train/val/test); each world searched over its own corpus.
 */
export function warmupDemonstrations(heldApart: RagTask[], set: DemoSet = DEMOS): { messages: Msg[] }[] {
  const { n, seed, worlds, style, bridgeShare, documentCallsOnly } = set;
  const taken = new Set(heldApart.map((t) => t.question));
  const r = rng(seed ^ 0x5eed);
  const demos: { messages: Msg[] }[] = [];
  for (let w = 0; w < worlds; w++) {
    const { tasks, docs } = demoProblems(n, seed + w, style);
    const search = new CorpusSearch(docs);
    const byTitle = new Map(docs.map((d) => [d.title, d]));
    for (const t of tasks) {
      if (taken.has(t.question)) continue;
      const [first, bridge] = t.hops.map((h) => byTitle.get(h)!);
      const q1 = queryFor(first);
      const found = search.search(q1, 1);
      const q2 = r() < bridgeShare ? queryFor(bridge) : q1;
      if (!documentCallsOnly) demos.push(chat(QUERY_INSTRUCTIONS, queryInput(t.question, []), q1));
      demos.push(chat(QUERY_INSTRUCTIONS, queryInput(t.question, found), q2));
      found.push(...search.search(q2, 1, new Set(found.map((d) => d.id))));
      const answered = found.some((d) => d.title === bridge.title);
      demos.push(chat(ANSWER_INSTRUCTIONS, answerInput(t.question, found), answered ? t.answer : 'unknown'));
    }
  }
  return demos;
}
