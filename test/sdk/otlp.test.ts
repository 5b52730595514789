/**
 * The OTLP/HTTP receiver fed by the real OpenTelemetry JS SDK, unchanged: the protobuf exporter and the
 * JSON exporter, rollout/attempt from resource attributes or headers, parentage kept, agent-lightning
 * v0 reward spans understood, spans without a rollout rejected through partial success.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { context, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AGL } from '../../protocol/spans.js';
import { type Harness, startDaemon } from '../runner/daemon-harness.js';

describe('OTLP/HTTP receiver with the OpenTelemetry SDK', () => {
  let daemon: Harness;
  before(async () => { daemon = await startDaemon(); });
  after(async () => { await daemon.close(); });

  async function exportTrace(kind: 'proto' | 'json', resource: Record<string, string>, headers: Record<string, string> = {}) {
    const opts = { url: `${daemon.url}/v1/traces`, headers: { authorization: `Bearer ${daemon.token}`, ...headers } };
    const exporter = kind === 'proto' ? new ProtoExporter(opts) : new JsonExporter(opts);
    const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'my-agent', ...resource }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer('agent-code', '1.0.0');
    const parent = tracer.startSpan('plan', { attributes: { step: 1, tags: ['a', 'b'], ratio: 0.25, ok: true } });
    const child = tracer.startSpan('tool:calculator', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'calculator' } }, trace.setSpan(context.active(), parent));
    child.addEvent('computed', { value: 42 });
    child.end();
    const reward = tracer.startSpan('agentlightning.reward', { attributes: { 'agentlightning.reward.0.name': 'accuracy', 'agentlightning.reward.0.value': 0.75, 'agentlightning.reward.1.name': 'format', 'agentlightning.reward.1.value': 1 } }, trace.setSpan(context.active(), parent));
    reward.end();
    parent.end();
    await provider.forceFlush();
    await provider.shutdown();
    return { traceId: parent.spanContext().traceId, parentId: parent.spanContext().spanId };
  }

  for (const kind of ['proto', 'json'] as const) {
    it(`stores ${kind} exports with parentage, attributes, events and v0 rewards`, async () => {
      const claim = await daemon.client.startRollout({ input: {}, workerId: 'otel' });
      const { traceId, parentId } = await exportTrace(kind, { [AGL.rolloutId]: claim.rollout.id, [AGL.attemptId]: claim.attempt.id });
      const spans = await daemon.client.querySpans({ rolloutId: claim.rollout.id });
      assert.equal(spans.length, 3);
      const plan = spans.find((s) => s.name === 'plan')!;
      assert.equal(plan.traceId, traceId);
      assert.equal(plan.spanId, parentId);
      assert.equal(plan.parentSpanId, null);
      assert.equal(plan.attemptId, claim.attempt.id);
      assert.equal(plan.attributes.step, 1);
      assert.deepEqual(plan.attributes.tags, ['a', 'b']);
      assert.equal(plan.attributes.ratio, 0.25);
      assert.equal(plan.attributes.ok, true);
      assert.equal(plan.resource['service.name'], 'my-agent');
      assert.ok(plan.endTime! >= plan.startTime && plan.startTime > Date.now() - 60_000, 'times converted from ns to ms');
      const tool = spans.find((s) => s.name === 'tool:calculator')!;
      assert.equal(tool.parentSpanId, parentId);
      assert.equal(tool.events[0].name, 'computed');
      assert.equal(tool.events[0].attributes.value, 42);
      const reward = spans.find((s) => s.name === 'agentlightning.reward')!;
      assert.equal(reward.attributes[AGL.rewardValue], 0.75);
      assert.equal(reward.attributes[AGL.rewardName], 'accuracy');
      assert.deepEqual(JSON.parse(String(reward.attributes[AGL.rewardComponents])), { accuracy: 0.75, format: 1 });
    });
  }

  it('takes rollout and attempt from headers when the resource names none', async () => {
    const claim = await daemon.client.startRollout({ input: {}, workerId: 'otel' });
    await exportTrace('proto', {}, { 'x-agl-rollout-id': claim.rollout.id, 'x-agl-attempt-id': claim.attempt.id });
    assert.equal((await daemon.client.querySpans({ rolloutId: claim.rollout.id })).length, 3);
  });

  it('rejects spans with no rollout (partial success) and bad bodies, with clear messages', async () => {
    const none = await fetch(`${daemon.url}/v1/traces`, { method: 'POST', headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'x', startTimeUnixNano: '1700000000000000000' }] }] }] }) });
    assert.equal(none.status, 200);
    const body = await none.json() as { partialSuccess: { rejectedSpans: number; errorMessage: string } };
    assert.equal(body.partialSuccess.rejectedSpans, 1);
    assert.match(body.partialSuccess.errorMessage, /names no rollout\/attempt/);
    const garbage = await fetch(`${daemon.url}/v1/traces`, { method: 'POST', headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/x-protobuf' }, body: Buffer.from([0x0a, 0xff, 0xff, 0xff]) });
    assert.equal(garbage.status, 400);
    const unauth = await fetch(`${daemon.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(unauth.status, 401);
    const unknown = await fetch(`${daemon.url}/v1/traces`, { method: 'POST', headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'agl.rollout_id', value: { stringValue: 'ro-missing' } }, { key: 'agl.attempt_id', value: { stringValue: 'at-missing' } }] }, scopeSpans: [{ spans: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'x', startTimeUnixNano: '1700000000000000000' }] }] }] }) });
    assert.equal(unknown.status, 200);
    assert.match((await unknown.json() as { partialSuccess: { errorMessage: string } }).partialSuccess.errorMessage, /ro-missing/);
  });
});
