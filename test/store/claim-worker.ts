/**
 * Child process for claims.test.ts: opens the store given as argv[2], says "ready", waits for "go" on stdin,
 * then claims one rollout at a time until none is left and prints the claimed rollout ids as JSON.
 */
import { openStore } from '../../daemon/store/index.js';

async function main(): Promise<void> {
  const [spec, workerId] = process.argv.slice(2) as [string, string];
  const store = await openStore(spec);
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const claimed: string[] = [];
  for (;;) {
    const claim = await store.claimNextRollout(workerId);
    if (!claim) break;
    if (claim.attempt.workerId !== workerId || claim.attempt.sequence !== 1) throw new Error(`bad claim ${JSON.stringify(claim)}`);
    claimed.push(claim.rollout.id);
  }
  await store.close();
  process.stdout.write(JSON.stringify(claimed) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
