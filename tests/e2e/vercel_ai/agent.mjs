// An agent on the Vercel AI SDK (`ai` 7, `@ai-sdk/openai`) whose only telemetry is the
// AI SDK's own, exported with the OpenTelemetry JS SDK's OTLP/HTTP exporter.
//
//   node agent.mjs otel|legacy CASE[,CASE...] ENDPOINT...   (or --record FILE instead of
//   endpoints: every span written as JSON, for the collector's unit tests)
//
// `otel` registers @ai-sdk/otel's OpenTelemetry integration (GenAI spans), `legacy` its
// LegacyOpenTelemetry (the `ai.*` spans of AI SDK 4-6). A case is MODE-PIPELINE[-off]:
// MODE generate|stream; PIPELINE whole|cut|marker, what `prepareStep` does to each tool
// result before the next request (nothing; keep 15 of 40 rows; keep 10 and say how many
// were omitted); `-off` records no inputs and outputs (recordInputs/recordOutputs false).
// The model is OPENAI_BASE_URL (the provider stand-in). Prints one JSON line:
// {case: {trace_id, calls}}.
import { writeFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel';
import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { generateText, registerTelemetry, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const [flavour, casesArg, ...targets] = process.argv.slice(2);
const recordTo = targets[0] === '--record' ? targets[1] : null;
const memory = new InMemorySpanExporter();
const spanProcessors = recordTo
  ? [new SimpleSpanProcessor(memory)]
  : targets.map((url) => new BatchSpanProcessor(new OTLPTraceExporter({ url })));
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `vercel-ai-${flavour}` }),
  spanProcessors,
});
provider.register();
registerTelemetry(flavour === 'legacy' ? new LegacyOpenTelemetry() : new OpenTelemetry());
const tracer = trace.getTracer('orders-agent');
const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: 'test' });

const ROWS = Array.from({ length: 40 }, (_, i) => ({
  id: `A-${String(i).padStart(4, '0')}`,
  status: 'refunding',
  note: `第${i}单`,
}));

function cutResults(messages, pipeline) {
  if (pipeline === 'whole') return messages;
  const cut = (rows) =>
    pipeline === 'marker'
      ? [...rows.slice(0, 10), `[... ${rows.length - 10} more rows omitted]`]
      : rows.slice(0, 15);
  return messages.map((message) =>
    message.role !== 'tool'
      ? message
      : {
          ...message,
          content: message.content.map((part) =>
            part.type === 'tool-result' && part.output.type === 'json'
              ? { ...part, output: { type: 'json', value: cut(part.output.value) } }
              : part,
          ),
        },
  );
}

async function runCase(name) {
  const [mode, pipeline, off] = name.split('-');
  const record = off !== 'off';
  return tracer.startActiveSpan(`orders-agent ${name}`, async (root) => {
    const options = {
      model: openai.chat('gpt-4o'),
      tools: {
        search_orders: tool({
          description: 'Search orders by status',
          inputSchema: z.object({ status: z.string() }),
          execute: async () => ROWS,
        }),
      },
      stopWhen: stepCountIs(5),
      prompt: `Which orders are refunding? (${name})`,
      prepareStep: ({ messages }) => ({ messages: cutResults(messages, pipeline) }),
      experimental_telemetry: { isEnabled: true, recordInputs: record, recordOutputs: record },
    };
    let steps;
    if (mode === 'stream') {
      const result = streamText(options);
      for await (const _ of result.textStream);
      steps = await result.steps;
    } else {
      steps = (await generateText(options)).steps;
    }
    root.end();
    const calls = steps.flatMap((step) => step.toolCalls.map((call) => call.toolCallId));
    return { trace_id: root.spanContext().traceId, calls };
  });
}

function nanoseconds([seconds, nanos]) {
  return `@ns:${seconds}${String(nanos).padStart(9, '0')}`;
}

const found = {};
for (const name of casesArg.split(',')) found[name] = await runCase(name);
await provider.forceFlush();
if (recordTo) {
  const spans = memory.getFinishedSpans().map((span) => ({
    trace_id: span.spanContext().traceId,
    span_id: span.spanContext().spanId,
    parent_span_id: span.parentSpanContext?.spanId ?? null,
    name: span.name,
    start_time_unix_nano: nanoseconds(span.startTime),
    end_time_unix_nano: nanoseconds(span.endTime),
    status_code: span.status.code,
    dropped_attributes_count: span.droppedAttributesCount,
    attributes: span.attributes,
    events: span.events.map((event) => ({ name: event.name, attributes: event.attributes ?? {} })),
    scope_name: span.instrumentationScope.name,
  }));
  // Unix nanoseconds exceed a double's 53 bits: written as JSON integers from digits.
  const text = JSON.stringify(spans, null, 1).replace(/"@ns:(\d+)"/g, '$1');
  writeFileSync(recordTo, `${text}\n`);
}
await provider.shutdown();
console.log(JSON.stringify(found));
