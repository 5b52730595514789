/**
 * The rag sample's corpus and questions (the paper's MuSiQue multi-hop QA in miniature): a few hundred
 * short documents about fictional people, towns, works and guilds, made from a seed, and questions whose
 * answer needs two documents (the bridge entity is only named in the first). Invented names keep the
 * answers out of any model's pretraining: the agent must retrieve. Documents are one short sentence
 * so two of them and the question fit the built-in model's 256-byte context. Pure: no I/O.
 */
import { rng } from '../shared/rng.js';

export interface Doc {
  id: string;
  title: string;
  text: string;
}
export interface RagTask {
  id: string;
  question: string;
  answer: string;
  /** Titles of the two documents needed. */ hops: [string, string];
}

const SYL = ['ka', 'lo', 'mir', 'ven', 'tor', 'sa', 'bel', 'du', 'rin', 'os', 'fa', 'gel', 'ith', 'mo', 'zan', 'pe', 'quor', 'ul', 'ny', 'drea'];
const PROFESSIONS = ['painter', 'poet', 'sculptor', 'weaver', 'clockmaker', 'cartographer', 'composer', 'glassblower'];
const WORK_KINDS = ['ballad', 'mural', 'atlas', 'tapestry', 'clock', 'statue', 'sonata', 'lantern'];
const REGIONS = ['Vastmark', 'Orrin Vale', 'the Selk Coast', 'Hallowmere', 'Duskfen'];

export interface World {
  people: { name: string; profession: string; town: string; guild: string }[];
  towns: { name: string; river: string; region: string }[];
  works: { name: string; kind: string; maker: string; year: number }[];
  guilds: { name: string; hall: string; founder: string }[];
}

/**
 * How a world's names are made: `syllables` (the sample's worlds: capitalised syllables from SYL) or `letters`
 * (the warm-up's copy drills: two or three letters drawn uniformly per syllable asked for, which no prior can guess).
 */
export type NameStyle = 'syllables' | 'letters';

/** Invented names, unique across the world. */
function namer(r: () => number, style: NameStyle = 'syllables') {
  const used = new Set<string>();
  return (syllables: number): string => {
    for (;;) {
      let s = '';
      if (style === 'letters') {
        for (let i = 0, n = syllables * 2 + Math.floor(r() * (syllables + 1)); i < n; i++) s += String.fromCharCode(97 + Math.floor(r() * 26));
      } else for (let i = 0; i < syllables; i++) s += SYL[Math.floor(r() * SYL.length)];
      const name = s[0].toUpperCase() + s.slice(1);
      if (!used.has(name)) {
        used.add(name);
        return name;
      }
    }
  };
}

export function makeWorld(seed = 5, sizes = { towns: 30, people: 70, guilds: 25 }, style: NameStyle = 'syllables'): World {
  const r = rng(seed);
  const name = namer(r, style);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const rivers = Array.from({ length: 12 }, () => name(2));
  const towns = Array.from({ length: sizes.towns }, () => ({ name: name(3), river: pick(rivers), region: pick(REGIONS) }));
  const guildNames = Array.from({ length: sizes.guilds }, () => `${name(2)} Guild`);
  const people = Array.from({ length: sizes.people }, () => ({
    name: `${name(2)} ${name(2)}`,
    profession: pick(PROFESSIONS),
    town: pick(towns).name,
    guild: pick(guildNames),
  }));
  const works = people.map((p) => ({
    name: `The ${name(3)}`,
    kind: WORK_KINDS[PROFESSIONS.indexOf(p.profession)],
    maker: p.name,
    year: 1500 + Math.floor(r() * 300),
  }));
  // Each guild has a founder (one of the people) and its hall in one of the towns.
  const guilds = guildNames.map((g) => ({ name: g, hall: pick(towns).name, founder: pick(people).name }));
  return { people, towns, works, guilds };
}

const article = (w: string) => (/^[aeiou]/i.test(w) ? 'an' : 'a');

/** One document per fact group: a person, a town, a work, a guild, and each person's guild membership. */
export function makeCorpus(w: World): Doc[] {
  const docs: Doc[] = [];
  const add = (title: string, text: string) => docs.push({ id: `d${docs.length}`, title, text });
  for (const p of w.people) add(p.name, `${p.name} is ${article(p.profession)} ${p.profession} born in ${p.town}.`);
  for (const p of w.people) add(`${p.name} (guild)`, `${p.name} belongs to the ${p.guild}.`);
  for (const t of w.towns) add(t.name, `${t.name} is a town in ${t.region} on the river ${t.river}.`);
  for (const k of w.works) add(k.name, `${k.name} is ${article(k.kind)} ${k.kind} made by ${k.maker} in ${k.year}.`);
  for (const g of w.guilds) add(g.name, `The ${g.name} was founded by ${g.founder}; its hall is in ${g.hall}.`);
  return docs;
}

type Maker = (w: World, pick: <T>(xs: T[]) => T) => Omit<RagTask, 'id'>;

/** Two-hop question templates: the first document names the bridge entity the second is about. */
export const QUESTION_TEMPLATES: Maker[] = [
  (w, pick) => {
    const k = pick(w.works);
    const p = w.people.find((x) => x.name === k.maker)!;
    return { question: `In which town was the maker of ${k.name} born?`, answer: p.town, hops: [k.name, p.name] };
  },
  (w, pick) => {
    const p = pick(w.people);
    const t = w.towns.find((x) => x.name === p.town)!;
    return { question: `Which river flows through the birthplace of ${p.name}?`, answer: t.river, hops: [p.name, t.name] };
  },
  (w, pick) => {
    const p = pick(w.people);
    const t = w.towns.find((x) => x.name === p.town)!;
    return { question: `In which region was ${p.name} born?`, answer: t.region, hops: [p.name, t.name] };
  },
  (w, pick) => {
    const g = pick(w.guilds);
    const p = w.people.find((x) => x.name === g.founder)!;
    return { question: `What was the profession of the founder of the ${g.name}?`, answer: p.profession, hops: [g.name, p.name] };
  },
  (w, pick) => {
    const g = pick(w.guilds);
    const t = w.towns.find((x) => x.name === g.hall)!;
    return { question: `On which river is the hall of the ${g.name}?`, answer: t.river, hops: [g.name, t.name] };
  },
  (w, pick) => {
    const k = pick(w.works);
    const p = w.people.find((x) => x.name === k.maker)!;
    return { question: `Which guild does the maker of ${k.name} belong to?`, answer: p.guild, hops: [k.name, `${p.name} (guild)`] };
  },
];

export interface RagSplits {
  train: RagTask[];
  val: RagTask[];
  test: RagTask[];
}

export function makeRagSplits(w: World, seed = 9, sizes = { train: 180, val: 40, test: 60 }): RagSplits {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const seen = new Set<string>();
  const take = (prefix: string, n: number): RagTask[] => {
    const out: RagTask[] = [];
    for (let tries = 0; out.length < n; tries++) {
      if (tries > n * 100) throw new Error(`only ${out.length} distinct ${prefix} questions of ${n} wanted`);
      const t = pick(QUESTION_TEMPLATES)(w, pick);
      if (seen.has(t.question)) continue;
      seen.add(t.question);
      out.push({ id: `${prefix}-${out.length}`, ...t });
    }
    return out;
  };
  return { test: take('test', sizes.test), val: take('val', sizes.val), train: take('train', sizes.train) };
}

function tokens(s: string): string[] {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9 ]+/g, ' ')
    .split(/\s+/)
    .filter((x) => x && !['the', 'a', 'an'].includes(x));
}

/** Token F1 between a predicted and a gold answer (SQuAD/MuSiQue style: lower-cased, articles and punctuation dropped). */
export function tokenF1(predicted: string, gold: string): number {
  const p = tokens(predicted),
    g = tokens(gold);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of p) {
    const n = counts.get(t) ?? 0;
    if (n > 0) {
      same++;
      counts.set(t, n - 1);
    }
  }
  if (same === 0) return 0;
  const precision = same / p.length,
    recall = same / g.length;
  return (2 * precision * recall) / (precision + recall);
}
