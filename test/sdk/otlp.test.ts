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
import { type Harness, startDaemon } from '../helpers/daemon.js';

describe('OTLP/HTTP receiver with the OpenTelemetry SDK', () => {
  let daemon: Harness;
  before(async () => {
    daemon = await startDaemon();
  });
  after(async () => {
    await daemon.close();
  });

  async function exportTrace(kind: 'proto' | 'json', resource: Record<string, string>, headers: Record<string, string> = {}) {
    const opts = { url: `${daemon.url}/v1/traces`, headers: { authorization: `Bearer ${daemon.token}`, ...headers } };
    const exporter = kind === 'proto' ? new ProtoExporter(opts) : new JsonExporter(opts);
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'my-agent', ...resource }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('agent-code', '1.0.0');
    const parent = tracer.startSpan('plan', { attributes: { step: 1, tags: ['a', 'b'], ratio: 0.25, ok: true } });
    const child = tracer.startSpan(
      'tool:calculator',
      { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'calculator' } },
      trace.setSpan(context.active(), parent),
    );
    child.addEvent('computed', { value: 42 });
    child.end();
    const reward = tracer.startSpan(
      'agentlightning.reward',
      {
        attributes: {
          'agentlightning.reward.0.name': 'accuracy',
          'agentlightning.reward.0.value': 0.75,
          'agentlightning.reward.1.name': 'format',
          'agentlightning.reward.1.value': 1,
        },
      },
      trace.setSpan(context.active(), parent),
    );
    reward.end();
    parent.end();
    await provider.forceFlush();
    await provider.shutdown();
    return { traceId: parent.spanContext().traceId, parentId: parent.spanContext().spanId };
  }

  for (const kind of ['proto', 'json'] as const) {
    it(`stores ${kind} exports with parentage, attributes, events and v0 rewards`, async () => {
      const claim = await daemon.client.startRollout({ input: {} }, 'otel');
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
    const claim = await daemon.client.startRollout({ input: {} }, 'otel');
    await exportTrace('proto', {}, { 'x-agl-rollout-id': claim.rollout.id, 'x-agl-attempt-id': claim.attempt.id });
    assert.equal((await daemon.client.querySpans({ rolloutId: claim.rollout.id })).length, 3);
  });

  it('rejects spans with no rollout (partial success) and bad bodies, with clear messages', async () => {
    const none = await fetch(`${daemon.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [] },
            scopeSpans: [
              { spans: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'x', startTimeUnixNano: '1700000000000000000' }] },
            ],
          },
        ],
      }),
    });
    assert.equal(none.status, 200);
    const body = (await none.json()) as { partialSuccess: { rejectedSpans: number; errorMessage: string } };
    assert.equal(body.partialSuccess.rejectedSpans, 1);
    assert.match(body.partialSuccess.errorMessage, /names no rollout\/attempt/);
    const garbage = await fetch(`${daemon.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/x-protobuf' },
      body: Buffer.from([0x0a, 0xff, 0xff, 0xff]),
    });
    assert.equal(garbage.status, 400);
    const unauth = await fetch(`${daemon.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(unauth.status, 401);
    const unknown = await fetch(`${daemon.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: {
              attributes: [
                { key: 'agl.rollout_id', value: { stringValue: 'ro-missing' } },
                { key: 'agl.attempt_id', value: { stringValue: 'at-missing' } },
              ],
            },
            scopeSpans: [
              { spans: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'x', startTimeUnixNano: '1700000000000000000' }] },
            ],
          },
        ],
      }),
    });
    assert.equal(unknown.status, 200);
    assert.match(((await unknown.json()) as { partialSuccess: { errorMessage: string } }).partialSuccess.errorMessage, /ro-missing/);
  });

  const post = (body: string | Uint8Array, contentType = 'application/json') =>
    fetch(`${daemon.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': contentType },
      body: body as BodyInit,
    });

  it('refuses exports that are not OTLP with 400 naming the path, never 500 and never a silent 200', async () => {
    const cases: [string, RegExp][] = [
      ['{"resourceSpans":5}', /resourceSpans: expected array, received number/],
      ['{"resourceSpans":[null]}', /resourceSpans\[0\]: expected object, received null/],
      ['null', /expected an ExportTraceServiceRequest object, received null/],
      ['[1,2]', /received array/],
      ['{"resourceSpans":[{"scopeSpans":"x"}]}', /resourceSpans\[0\]\.scopeSpans: expected array, received string/],
      ['{"resourceSpans":[{"resource":{"attributes":5},"scopeSpans":[]}]}', /resource\.attributes: expected an array/],
    ];
    for (const [body, pattern] of cases) {
      const res = await post(body);
      assert.equal(res.status, 400, body);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const problem = (await res.json()) as { status: number; detail: string };
      assert.equal(problem.status, 400);
      assert.match(problem.detail, pattern, body);
    }
    assert.equal((await post('{}', 'text/plain')).status, 415);
    const notUtf8 = await post(
      Buffer.concat([Buffer.from('{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}]}]}]}')]),
    );
    assert.equal(notUtf8.status, 400);
    assert.match(((await notUtf8.json()) as { detail: string }).detail, /not valid UTF-8/);
  });

  it('refuses a protobuf export whose strings are not UTF-8 (never silently replaced)', async () => {
    const { ExportTraceServiceRequest } = await import('../../daemon/server/otlp-proto.js');
    const encoded = Buffer.from(
      ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'QQ' }] }] }] })).finish(),
    );
    const at = encoded.indexOf('QQ');
    encoded[at] = 0xff;
    const res = await post(encoded, 'application/x-protobuf');
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
  });

  it('stores the good spans of a partly bad export and reports the others through partialSuccess', async () => {
    const claim = await daemon.client.startRollout({ input: {} }, 'otel');
    const ids = [
      { key: 'agl.rollout_id', value: { stringValue: claim.rollout.id } },
      { key: 'agl.attempt_id', value: { stringValue: claim.attempt.id } },
    ];
    const span = (name: string, extra: Record<string, unknown> = {}) => ({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      name,
      startTimeUnixNano: '1700000000000000000',
      ...extra,
    });
    const other = await daemon.client.startRollout({ input: {} }, 'otel');
    const res = await post(
      JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: ids },
            scopeSpans: [
              {
                spans: [
                  span('good'),
                  span('bad-time', { startTimeUnixNano: 'yesterday' }),
                  span('bad-attrs', { attributes: 5 }),
                  span('bad-kind', { kind: 9 }),
                  7,
                ],
              },
            ],
          },
          // A known rollout with an attempt that is not its own: rejected, not a 500.
          {
            resource: { attributes: [ids[0], { key: 'agl.attempt_id', value: { stringValue: other.attempt.id } }] },
            scopeSpans: [{ spans: [span('wrong-attempt')] }],
          },
        ],
      }),
    );
    assert.equal(res.status, 200);
    const { partialSuccess } = (await res.json()) as { partialSuccess: { rejectedSpans: number; errorMessage: string } };
    assert.equal(partialSuccess.rejectedSpans, 5);
    for (const why of [
      /spans\[1\]\.startTimeUnixNano: expected unsigned nanoseconds/,
      /spans\[2\]\.attributes: expected an array/,
      /spans\[3\]\.kind/,
      /spans\[4\]: expected a span object/,
      new RegExp(`unknown attempt '${other.attempt.id}'`),
    ]) {
      assert.match(partialSuccess.errorMessage, why);
    }
    assert.deepEqual(
      (await daemon.client.querySpans({ rolloutId: claim.rollout.id })).map((s) => s.name),
      ['good'],
    );
  });
});
