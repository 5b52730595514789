/**
 * `npm run bench:gateway [-- --quick]` (bench/README.md): what the gateway adds to a chat completion.
 * A fake upstream (own process) answers immediately; a real `agl serve` forwards to it (upstream LLM
 * resource) and records a span per call under a rollout attempt. The same requests go directly to the
 * upstream and through the gateway, at concurrency 1 and 64, streaming and not; latencies are measured
 * to the end of the response body. Also the local policy's dynamic batching (bench/gateway-local.ts).
 * Writes bench/results/gateway.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { attemptBaseUrl } from '../protocol/ids.js';
import { benchLocalBatching } from './gateway-local.js';
import { cpuMs, machine, percentile, round, startDaemonProcess, startUpstreamProcess } from './gateway-processes.js';

const { values } = parseArgs({ options: { quick: { type: 'boolean' } } });
const quick = values.quick === true;
const REQUESTS = { 1: quick ? 300 : 2000, 64: quick ? 3000 : 20000 } as Record<number, number>;
const WARMUP = quick ? 100 : 500;
// The bench's one rollout gets every call, and the store appends each call's text to the rollout's search text until
// it is full (64 Ki characters, ~3000 calls here): until then each call costs more than the last (SQLite's FTS5
// re-indexes the growing document). The gateway's warm-up fills it, so every case measures the same steady state.
const GATEWAY_WARMUP = quick ? 1000 : 4000;

const body = (stream: boolean) =>
  JSON.stringify({
    model: 'fake-model',
    messages: [
      { role: 'system', content: 'You are a calculator.' },
      { role: 'user', content: 'What is 6*7?' },
    ],
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });

async function once(url: string, payload: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer agl' },
    body: payload,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status}: ${text.slice(0, 300)}`);
  return performance.now() - t0;
}

async function load(url: string, stream: boolean, concurrency: number, n: number): Promise<{ p50: number; p99: number; rps: number }> {
  const payload = body(stream);
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        latencies.push(await once(url, payload));
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), rps: n / seconds };
}

type Load = Awaited<ReturnType<typeof load>>;
/** A process to send calls to and measure: its URL and pid (for its CPU time). */
interface Target {
  url: string;
  pid: number;
}
/** One case's figures: latencies and throughput direct and through the gateway, and each process's CPU per call. */
interface Case {
  name: string;
  direct: Load;
  gw: Load;
  added: { p50: number; p99: number };
  daemonCpuPerCall: number;
  upstreamCpuPerCall: number;
}

/** A case (streaming or not, at concurrency c), direct and through the gateway. */
async function measureCase(upstream: Target, gateway: Target, stream: boolean, c: number): Promise<Case> {
  // Alternate direct and gateway halves so drift on a shared machine hits both alike.
  const half = Math.floor(REQUESTS[c] / 2);
  // CPU the daemon spends per call (user + system) is a steadier figure than latency on a busy machine.
  let daemonCpu = 0;
  let upstreamCpu = 0;
  const direct_ = async () => {
    const c0 = cpuMs(upstream.pid) ?? 0;
    const r = await load(upstream.url, stream, c, half);
    upstreamCpu += (cpuMs(upstream.pid) ?? 0) - c0;
    return r;
  };
  const gateway_ = async () => {
    const c0 = cpuMs(gateway.pid) ?? 0;
    const r = await load(gateway.url, stream, c, half);
    daemonCpu += (cpuMs(gateway.pid) ?? 0) - c0;
    return r;
  };
  const d1 = await direct_();
  const g1 = await gateway_();
  const d2 = await direct_();
  const g2 = await gateway_();
  const direct = { p50: (d1.p50 + d2.p50) / 2, p99: (d1.p99 + d2.p99) / 2, rps: (d1.rps + d2.rps) / 2 };
  const gw = { p50: (g1.p50 + g2.p50) / 2, p99: (g1.p99 + g2.p99) / 2, rps: (g1.rps + g2.rps) / 2 };
  const name = `c${c}.${stream ? 'stream' : 'plain'}`;
  const added = { p50: gw.p50 - direct.p50, p99: gw.p99 - direct.p99 };
  return { name, direct, gw, added, daemonCpuPerCall: daemonCpu / (2 * half), upstreamCpuPerCall: upstreamCpu / (2 * half) };
}

function caseMetrics({ name, direct, gw, added, daemonCpuPerCall, upstreamCpuPerCall }: Case): Record<string, number> {
  return {
    [`${name}.direct_p50_ms`]: round(direct.p50),
    [`${name}.gateway_p50_ms`]: round(gw.p50),
    [`${name}.direct_p99_ms`]: round(direct.p99),
    [`${name}.gateway_p99_ms`]: round(gw.p99),
    [`${name}.added_p50_ms`]: round(added.p50),
    [`${name}.added_p99_ms`]: round(added.p99),
    [`${name}.daemon_cpu_ms_per_call`]: round(daemonCpuPerCall),
    [`${name}.upstream_cpu_ms_per_call`]: round(upstreamCpuPerCall),
    [`${name}.direct_rps`]: round(direct.rps, 1),
    [`${name}.gateway_rps`]: round(gw.rps, 1),
    [`${name}.throughput_ratio`]: round(gw.rps / direct.rps),
  };
}

function caseRow({ name, direct, gw, added, daemonCpuPerCall, upstreamCpuPerCall }: Case): string[] {
  return [
    name,
    direct.p50.toFixed(2),
    gw.p50.toFixed(2),
    direct.p99.toFixed(2),
    gw.p99.toFixed(2),
    added.p50.toFixed(2),
    added.p99.toFixed(2),
    (gw.rps / direct.rps).toFixed(2),
    daemonCpuPerCall.toFixed(3),
    upstreamCpuPerCall.toFixed(3),
  ];
}

/** The table and the local policy's batching. */
function printTable(rows: string[][], metrics: Record<string, number>): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  console.log(rows.map((r) => r.map((x, i) => x.padEnd(widths[i])).join('  ')).join('\n'));
  console.log(
    `local policy (built-in 0.8M, 32 tokens/call): ${metrics['local.c1_completion_tok_s']} tok/s sequential, ${metrics['local.c16_completion_tok_s']} tok/s at 16 concurrent (x${metrics['local.batching_speedup']}, mean generate() batch ${metrics['local.c16_mean_batch_size']})`,
  );
}

async function main(): Promise<void> {
  const upstream = await startUpstreamProcess();
  const daemon = await startDaemonProcess();
  try {
    await daemon.client.addResources({
      resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'fake-model', backend: 'upstream', upstreamUrl: upstream.url } },
    });
    const claim = await daemon.client.startRollout({ input: { bench: 'gateway' } }, 'bench');
    const gateway = attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id);
    const metrics: Record<string, number> = {};
    const rows: string[][] = [
      ['case', 'direct p50', 'gateway p50', 'direct p99', 'gateway p99', 'added p50', 'added p99', 'rps ratio', 'daemon cpu/call', 'upstream cpu/call'],
    ];
    let addedP50 = -Infinity;
    let addedP99 = -Infinity;
    let minRatio = Infinity;
    for (const stream of [false, true]) {
      await load(upstream.url, stream, 8, WARMUP);
      await load(gateway, stream, 8, GATEWAY_WARMUP);
      for (const c of [1, 64]) {
        const k = await measureCase({ url: upstream.url, pid: upstream.proc.pid! }, { url: gateway, pid: daemon.pid }, stream, c);
        Object.assign(metrics, caseMetrics(k));
        addedP50 = Math.max(addedP50, k.added.p50);
        addedP99 = Math.max(addedP99, k.added.p99);
        minRatio = Math.min(minRatio, k.gw.rps / k.direct.rps);
        rows.push(caseRow(k));
      }
    }
    const recorded = (await daemon.client.statistics()).spans;
    metrics.added_p50_ms = round(addedP50);
    metrics.added_p99_ms = round(addedP99);
    metrics.throughput_ratio = round(minRatio);
    metrics.spans_recorded = recorded;
    Object.assign(metrics, await benchLocalBatching(quick));
    printTable(rows, metrics);
    console.log(
      `\nworst case: added p50 ${addedP50.toFixed(2)} ms, added p99 ${addedP99.toFixed(2)} ms, throughput ratio ${minRatio.toFixed(2)} (ms; ${recorded} spans recorded)`,
    );
    mkdirSync(join(process.cwd(), 'bench', 'results'), { recursive: true });
    writeFileSync(
      join(process.cwd(), 'bench', 'results', 'gateway.json'),
      JSON.stringify({ date: new Date().toISOString(), machine: machine(), quick, metrics }, null, 2) + '\n',
    );
  } finally {
    await daemon.stop();
    await upstream.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
