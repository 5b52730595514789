/**
 * The sql sample's database: a small fictional company (departments, employees, projects) in SQLite,
 * made deterministically from a seed so `make-db.ts` always writes the same file. Column names are
 * short on purpose: the built-in byte-level model has a 256-byte context, so the schema line, the
 * question and the SQL must all fit in it.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from '../shared/rng.js';

/** The schema as the agent shows it to the model (one line). */
export const SCHEMA_LINE = 'emp(name,dept,pay,year) dept(name,city) proj(name,dept,cost)';

/** This sample's folder, whether tsx loads it as CommonJS (the package has no "type": "module") or as ESM. */
function sampleDir(): string {
  if (typeof __dirname === 'string') return __dirname;
  return dirname(fileURLToPath(import.meta.url));
}

export const DATA_DIR = join(sampleDir(), 'data');
export const DEFAULT_DB_PATH = join(DATA_DIR, 'company.db');

export const DEPARTMENTS: { name: string; city: string }[] = [
  { name: 'Sales', city: 'Oslo' },
  { name: 'Research', city: 'Lyon' },
  { name: 'Support', city: 'Oslo' },
  { name: 'Legal', city: 'Porto' },
  { name: 'Design', city: 'Lyon' },
  { name: 'Finance', city: 'Graz' },
  { name: 'Ops', city: 'Porto' },
  { name: 'Media', city: 'Turku' },
];

const FIRST_NAMES = [
  'Ada',
  'Ben',
  'Cleo',
  'Dan',
  'Eli',
  'Fay',
  'Gus',
  'Hana',
  'Ivo',
  'Jude',
  'Kai',
  'Lea',
  'Max',
  'Nia',
  'Otto',
  'Pia',
  'Quin',
  'Rui',
  'Sara',
  'Theo',
  'Uma',
  'Vik',
  'Wren',
  'Xia',
  'Yara',
  'Zed',
  'Alba',
  'Bram',
  'Cora',
  'Dag',
  'Edda',
  'Finn',
  'Gia',
  'Hugo',
  'Iris',
  'Jon',
  'Kira',
  'Lars',
  'Mila',
  'Nils',
  'Olga',
  'Paul',
  'Rosa',
  'Sven',
  'Tara',
  'Ugo',
  'Vera',
  'Walt',
  'Ylva',
  'Zoe',
];

const PROJECT_NAMES = [
  'Apollo',
  'Beacon',
  'Comet',
  'Delta',
  'Ember',
  'Falcon',
  'Garnet',
  'Harbor',
  'Indigo',
  'Juniper',
  'Kestrel',
  'Lumen',
  'Meteor',
  'Nimbus',
  'Orbit',
  'Pulsar',
  'Quartz',
  'Raven',
  'Summit',
  'Tundra',
];

export interface Employee {
  name: string;
  dept: string;
  pay: number;
  year: number;
}
export interface Project {
  name: string;
  dept: string;
  cost: number;
}
export interface CompanyRows {
  depts: typeof DEPARTMENTS;
  emps: Employee[];
  projs: Project[];
}

/** Who and what a company is made of, and the ranges its hiring years and pay levels are drawn from. */
export interface Roster {
  depts: typeof DEPARTMENTS;
  people: string[];
  projects: string[];
  years: [number, number];
  payOffset: number;
}
/** The sample's company: the database every split's questions are asked about. */
export const COMPANY: Roster = { depts: DEPARTMENTS, people: FIRST_NAMES, projects: PROJECT_NAMES, years: [2015, 2024], payOffset: 0 };

/** The rows, from a seed (same seed, same rows). */
export function companyRows(seed = 7, roster: Roster = COMPANY): CompanyRows {
  const r = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = <T>(xs: T[]) => xs[int(0, xs.length - 1)];
  const depts = roster.depts;
  // Every department gets at least two employees, so "how many in X" is never trivially 0.
  const emps: Employee[] = roster.people.map((name, i) => ({
    name,
    dept: i < depts.length * 2 ? depts[i % depts.length].name : pick(depts).name,
    pay: int(30, 120) * 1000 + roster.payOffset,
    year: int(roster.years[0], roster.years[1]),
  }));
  const projs: Project[] = roster.projects.map((name, i) => ({
    name,
    dept: i < depts.length ? depts[i].name : pick(depts).name,
    cost: int(5, 90) * 1000,
  }));
  return { depts, emps, projs };
}

/** Creates the schema in `db` and inserts the rows. */
export function fillCompanyDb(db: Database.Database, rows: CompanyRows): void {
  db.exec(`
    CREATE TABLE dept (name TEXT PRIMARY KEY, city TEXT NOT NULL);
    CREATE TABLE emp (name TEXT PRIMARY KEY, dept TEXT NOT NULL REFERENCES dept(name), pay INTEGER NOT NULL, year INTEGER NOT NULL);
    CREATE TABLE proj (name TEXT PRIMARY KEY, dept TEXT NOT NULL REFERENCES dept(name), cost INTEGER NOT NULL);
  `);
  const insert = db.transaction(() => {
    const d = db.prepare('INSERT INTO dept (name, city) VALUES (?, ?)');
    for (const x of rows.depts) d.run(x.name, x.city);
    const e = db.prepare('INSERT INTO emp (name, dept, pay, year) VALUES (?, ?, ?, ?)');
    for (const x of rows.emps) e.run(x.name, x.dept, x.pay, x.year);
    const p = db.prepare('INSERT INTO proj (name, dept, cost) VALUES (?, ?, ?)');
    for (const x of rows.projs) p.run(x.name, x.dept, x.cost);
  });
  insert();
}

/** Writes a fresh database file with the schema and the rows. */
export function writeCompanyDb(path: string, seed = 7): CompanyRows {
  mkdirSync(dirname(path), { recursive: true });
  if (existsSync(path)) rmSync(path);
  const db = new Database(path);
  try {
    const rows = companyRows(seed);
    fillCompanyDb(db, rows);
    return rows;
  } finally {
    db.close();
  }
}

/** Opens the sample database read-only (a predicted query can never change it). Makes it when missing. */
export function openCompanyDb(path = DEFAULT_DB_PATH): Database.Database {
  if (!existsSync(path)) writeCompanyDb(path);
  return new Database(path, { readonly: true, fileMustExist: true });
}
