/**
 * Runner process for bench/store.ts: N concurrent async runner loops, each claiming rollouts from the daemon
 * over HTTP (client/client.ts) and running the synthetic agent of agent-lightning's store benchmark
 * (bench/README.md) on it: rounds of `agent{i}` spans with children `round{i}_1/_2` carrying random flattened
 * attributes, intermediate rewards with probability 0.5, a `final` span and a final reward in [1, 2].
 * Spans go through one process-wide batching exporter (like OpenTelemetry's BatchSpanProcessor or the SDK's
 * BatchingSink): batches of every runner's spans, one request in flight at a time, so each rollout's spans
 * keep their order; the agent never blocks on it, and an attempt is finished once its spans are acknowledged.
 *
 * argv: url token runners maxRounds sleepSeconds workerPrefix. Prints "ready", runs until stdin closes,
 * then prints one JSON line of stats.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { AglClient } from '../client/client.js';
import { newSpanId, newTraceId } from '../protocol/ids.js';
import { AGL, SPAN } from '../protocol/spans.js';
import type { Attributes, SpanInput } from '../protocol/store.js';
import type { Claim } from '../protocol/lightning-store.js';

const [url, token, runnersArg, maxRoundsArg, sleepArg, prefix] = process.argv.slice(2) as string[];
const runners = Number(runnersArg);
const maxRounds = Number(maxRoundsArg);
const sleepSeconds = Number(sleepArg);
const client = new AglClient({ url: url!, token: token!, timeoutMs: 120_000 });

const randInt = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
// Random text is cut from one pre-generated pool (character-by-character building cost more CPU and GC
// than everything else the runner does); every cut starts at a random offset.
const POOL = randomBytes(3 << 20).toString('base64');
const randString = (n: number) => {
  const at = Math.floor(Math.random() * (POOL.length - n));
  return POOL.slice(at, at + n);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Random nested dict (depth 1-3, breadth 2-6, keys 3-20 chars, values 5-300 chars), flattened with dots. */
function randomAttributes(): Attributes {
  const out: Attributes = {};
  const fill = (prefixKey: string, depth: number) => {
    const breadth = randInt(2, 6);
    for (let i = 0; i < breadth; i++) {
      const key = prefixKey + randString(randInt(3, 20));
      if (depth > 1 && Math.random() < 0.5) fill(key + '.', depth - 1);
      else out[key] = randString(randInt(5, 300));
    }
  };
  fill('', randInt(1, 3));
  return out;
}

/**
 * Process-wide span exporter: ships what accumulated every 20 ms (or at 500 spans, or when a rollout ends),
 * one request at a time; what arrives meanwhile goes in the next request.
 */
class SpanExporter {
  private buffer: SpanInput[] = [];
  private acks: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private timer: NodeJS.Timeout | null = null;
  private sending = false;
  /** `flush`: ship now (a rollout's last spans, as a tracer's force-flush at the end of a rollout). */
  add(spans: SpanInput[], flush = false): Promise<void> {
    this.buffer.push(...spans);
    const acked = new Promise<void>((resolve, reject) => this.acks.push({ resolve, reject }));
    if (flush || this.buffer.length >= 500) this.ship();
    else if (!this.timer) this.timer = setTimeout(() => this.ship(), 20);
    return acked;
  }
  private ship(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.sending || this.buffer.length === 0) return;
    const spans = this.buffer,
      acks = this.acks;
    this.buffer = [];
    this.acks = [];
    this.sending = true;
    client
      .addSpans(spans)
      .then(
        () => acks.forEach((a) => a.resolve()),
        (e) => acks.forEach((a) => a.reject(e)),
      )
      .finally(() => {
        this.sending = false;
        if (this.buffer.length) this.ship();
      });
  }
}
const exporter = new SpanExporter();

const stats = { cpuMs: 0, rollouts: 0, spans: 0, claimLatenciesMs: [] as number[], plannedSleepS: [] as number[], errors: [] as string[] };

async function runAgent(claim: Claim): Promise<void> {
  const { rollout, attempt } = claim;
  const task = String(rollout.input);
  const traceId = newTraceId();
  const base = { rolloutId: rollout.id, attemptId: attempt.id, traceId };
  let acked: Promise<void> = Promise.resolve();
  const send = (spans: SpanInput[], flush = false) => {
    stats.spans += spans.length;
    acked = exporter.add(spans, flush);
  };
  const reward = (value: number, parent: string | null): SpanInput => {
    const t = Date.now();
    return { ...base, spanId: newSpanId(), parentSpanId: parent, name: SPAN.reward, startTime: t, endTime: t, attributes: { [AGL.rewardValue]: value } };
  };
  const child = async (name: string, parent: string, withTask: boolean): Promise<SpanInput> => {
    const start = Date.now();
    const pause = Math.random() * sleepSeconds;
    planned += pause;
    await sleep(pause * 1000);
    const attributes = randomAttributes();
    if (withTask) attributes.task = task;
    return { ...base, spanId: newSpanId(), parentSpanId: parent, name, startTime: start, endTime: Date.now(), attributes };
  };
  let planned = 0;
  const rounds = randInt(1, maxRounds);
  const selected = randInt(0, rounds - 1);
  for (let i = 0; i < rounds; i++) {
    const agentSpanId = newSpanId();
    const start = Date.now();
    const c1 = await child(`round${i}_1`, agentSpanId, i === selected);
    const c2 = await child(`round${i}_2`, agentSpanId, false);
    const batch: SpanInput[] = [c1, c2, { ...base, spanId: agentSpanId, name: `agent${i}`, startTime: start, endTime: Date.now() }];
    if (Math.random() < 0.5) batch.push(reward(Math.random(), null));
    send(batch);
  }
  const final = await child('final', newSpanId(), false);
  final.parentSpanId = null;
  send([final, reward(1 + Math.random(), null)], true);
  await acked; // the exporter ships in order, so the last batch's ack covers all of this rollout's spans
  await client.finishAttempt(attempt.id, { status: 'succeeded' });
  stats.rollouts++;
  stats.plannedSleepS.push(planned);
}

/**
 * While the queue is empty only one loop per process probes it (every 10 ms); the others wait for it to
 * find work, so idle runners do not flood the daemon with empty dequeues.
 */
let idle: Promise<void> | null = null;
let wakeIdle: (() => void) | null = null;
let proberId: string | null = null;
let stopping = false;

function releaseIdle(): void {
  const wake = wakeIdle;
  idle = null;
  wakeIdle = null;
  proberId = null;
  wake?.();
}

async function runnerLoop(workerId: string): Promise<void> {
  while (!stopping) {
    if (idle && proberId !== workerId) {
      await idle;
      continue;
    }
    const t0 = performance.now();
    let claim: Claim | null;
    try {
      claim = await client.claimNextRollout(workerId);
    } catch (e) {
      stats.errors.push(`dequeue: ${(e as Error).message}`);
      await sleep(100);
      continue;
    }
    if (claim) {
      stats.claimLatenciesMs.push(performance.now() - t0);
      if (idle) releaseIdle();
      try {
        await runAgent(claim);
      } catch (e) {
        stats.errors.push(`rollout ${claim.rollout.id}: ${(e as Error).message}`);
      }
      continue;
    }
    if (!idle) {
      idle = new Promise((r) => (wakeIdle = r));
      proberId = workerId;
    }
    if (proberId === workerId) await sleep(10);
  }
}

async function main(): Promise<void> {
  const loops = Array.from({ length: runners }, (_, i) => runnerLoop(`${prefix}-${i}`));
  process.stdout.write('ready\n');
  process.stdin.resume();
  await new Promise<void>((r) => process.stdin.once('end', () => r()));
  stopping = true;
  releaseIdle();
  await Promise.race([Promise.all(loops), sleep(5000)]);
  const cpu = process.cpuUsage();
  stats.cpuMs = (cpu.user + cpu.system) / 1000;
  process.stdout.write(JSON.stringify(stats) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
