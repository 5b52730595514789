/**
 * `npm run bench:ingest [-- --quick]` (bench/README.md): OTLP/HTTP trace ingest into a real `agl serve`.
 * Spans are made with the OpenTelemetry JS SDK (nested, with attributes and events, tied to rollout
 * attempts by resource attributes), then exported with the SDK's own OTLP exporters, protobuf and JSON,
 * in batches of 512 with several exports in flight. spans/s counts spans acknowledged (durable: the
 * daemon answers after its store commit) and checks the store holds them all. Writes bench/results/ingest.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { context, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AGL } from '../protocol/spans.js';
import { cpuMs, machine, peakRssMb, percentile, round, startDaemonProcess } from './gateway-processes.js';

const { values } = parseArgs({ options: { quick: { type: 'boolean' } } });
const quick = values.quick === true;
const SPANS = quick ? 20_000 : 200_000;
const ATTEMPTS = 8;
const BATCH = 512;
const IN_FLIGHT = 8;

/** Real SDK spans: per attempt, rounds of a parent with two children carrying attributes and an event. */
async function makeSpans(claims: { rolloutId: string; attemptId: string }[]): Promise<ReadableSpan[][]> {
  const perAttempt = Math.ceil(SPANS / claims.length);
  const out: ReadableSpan[][] = [];
  for (const c of claims) {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'bench-agent', [AGL.rolloutId]: c.rolloutId, [AGL.attemptId]: c.attemptId }),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const tracer = provider.getTracer('bench');
    for (let made = 0; made < perAttempt;) {
      const parent = tracer.startSpan(`agent${made}`, { attributes: { round: made, 'gen_ai.agent.name': 'bench' } });
      const ctx = trace.setSpan(context.active(), parent);
      for (let k = 0; k < 2 && made + 1 + k < perAttempt; k++) {
        const child = tracer.startSpan(
          `round${made}_${k}`,
          {
            attributes: {
              'payload.text': 'x'.repeat(120),
              'payload.n': k,
              'payload.ok': true,
              'payload.tags': ['a', 'b', 'c'],
              'payload.score': Math.random(),
            },
          },
          ctx,
        );
        child.addEvent('step', { detail: 'done' });
        child.end();
      }
      parent.end();
      made += 3;
    }
    await provider.forceFlush();
    out.push(memory.getFinishedSpans().slice(0, perAttempt));
    await provider.shutdown();
  }
  return out;
}

async function ingest(kind: 'proto' | 'json', url: string, token: string, spans: ReadableSpan[][]) {
  const opts = { url: `${url}/v1/traces`, headers: { authorization: `Bearer ${token}` }, concurrencyLimit: IN_FLIGHT * 2, timeoutMillis: 60_000 };
  const exporter = kind === 'proto' ? new ProtoExporter(opts) : new JsonExporter(opts);
  const batches = spans.flatMap((list) => Array.from({ length: Math.ceil(list.length / BATCH) }, (_, i) => list.slice(i * BATCH, (i + 1) * BATCH)));
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < batches.length) {
        const batch = batches[next++];
        const s = performance.now();
        await new Promise<void>((resolve, reject) =>
          exporter.export(batch, (r) => (r.code === ExportResultCode.SUCCESS ? resolve() : reject(r.error ?? new Error('export failed')))),
        );
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await exporter.shutdown();
  latencies.sort((a, b) => a - b);
  return {
    spansPerS: batches.reduce((n, b) => n + b.length, 0) / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    total: batches.reduce((n, b) => n + b.length, 0),
  };
}

async function main(): Promise<void> {
  const daemon = await startDaemonProcess();
  try {
    const metrics: Record<string, number> = {};
    let worstP99 = 0;
    for (const kind of ['proto', 'json'] as const) {
      const claims = await Promise.all(Array.from({ length: ATTEMPTS }, () => daemon.client.startRollout({ input: { bench: 'ingest' } }, 'bench')));
      const spans = await makeSpans(claims.map((c) => ({ rolloutId: c.rollout.id, attemptId: c.attempt.id })));
      const before = (await daemon.client.statistics()).spans;
      const cpu0 = cpuMs(daemon.pid) ?? 0;
      const r = await ingest(kind, daemon.url, daemon.token, spans);
      // Daemon CPU per span (decode, convert, validate, durable insert): steadier than spans/s on a shared machine.
      const cpuUsPerSpan = (((cpuMs(daemon.pid) ?? 0) - cpu0) * 1000) / r.total;
      const stored = (await daemon.client.statistics()).spans - before;
      if (stored !== r.total) throw new Error(`${kind}: ${r.total} spans acknowledged but ${stored} stored`);
      metrics[`otlp_${kind}_spans_per_s`] = Math.round(r.spansPerS);
      metrics[`otlp_${kind}_request_p50_ms`] = round(r.p50);
      metrics[`otlp_${kind}_request_p99_ms`] = round(r.p99);
      metrics[`otlp_${kind}_daemon_cpu_us_per_span`] = round(cpuUsPerSpan, 1);
      metrics[`otlp_${kind}_spans_per_daemon_cpu_s`] = Math.round(1e6 / cpuUsPerSpan);
      worstP99 = Math.max(worstP99, r.p99);
      console.log(
        `${kind.padEnd(5)}  ${r.total} spans  ${Math.round(r.spansPerS).toLocaleString('en-US')} spans/s  request p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  daemon CPU ${cpuUsPerSpan.toFixed(1)} us/span (= ${Math.round(1e6 / cpuUsPerSpan).toLocaleString('en-US')} spans per CPU-second)  (batches of ${BATCH}, ${IN_FLIGHT} in flight; all stored)`,
      );
    }
    metrics.request_p99_ms = round(worstP99);
    metrics.peak_rss_mb = peakRssMb(daemon.pid) ?? -1;
    console.log(`daemon peak RSS ${metrics.peak_rss_mb} MB`);
    mkdirSync(join(process.cwd(), 'bench', 'results'), { recursive: true });
    writeFileSync(
      join(process.cwd(), 'bench', 'results', 'ingest.json'),
      JSON.stringify({ date: new Date().toISOString(), machine: machine(), quick, metrics }, null, 2) + '\n',
    );
  } finally {
    await daemon.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
