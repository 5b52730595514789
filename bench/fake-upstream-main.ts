/** Runs the fake OpenAI-protocol upstream (test/helpers/fake-upstream.ts) as its own process for benchmarks. */
import { startFakeUpstream } from '../test/helpers/fake-upstream.js';

void startFakeUpstream().then((u) => console.log(`upstream at ${u.url}`));
