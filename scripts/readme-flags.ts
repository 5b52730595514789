// `npm run docs:cli`: rewrites the README's flag lists from the commands' declarations (protocol/cli-commands.ts,
// protocol/train-options.ts). test/protocol/cli-options.test.ts fails while the README and the declarations differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { ALL_DECLARATIONS } from '../protocol/cli-commands.js';
import { readmeFlagLists } from '../protocol/cli-options.js';

const readme = readFileSync('README.md', 'utf8');
const next = readmeFlagLists(readme, ALL_DECLARATIONS);
writeFileSync('README.md', next);
process.stdout.write(next === readme ? 'README.md: the flag lists were up to date\n' : `README.md: ${ALL_DECLARATIONS.length} flag lists rewritten\n`);
