// Emits Claude Code-shaped log events through the stock OpenTelemetry JS log SDK and
// exporter, to the collector at process.argv[2] ("json" or "proto" per argv[3]).
// One line per record emitted: its tool_use_id. With "bad-text" (argv[5]) one record's
// body holds a lone surrogate, which the JSON exporter sends escaped.
import { logs } from "@opentelemetry/api-logs";
import { OTLPLogExporter as JsonExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtoExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";

const [endpoint, protocol, countText, badText] = process.argv.slice(2);
const Exporter = protocol === "proto" ? ProtoExporter : JsonExporter;
const exporter = new Exporter({ url: `${endpoint}/v1/logs` });
const provider = new LoggerProvider({
  resource: resourceFromAttributes({ "service.name": "claude-code" }),
  processors: [new SimpleLogRecordProcessor({ exporter })],
});
logs.setGlobalLoggerProvider(provider);
const logger = logs.getLogger("com.anthropic.claude_code.events");
const count = Number(countText);
for (let index = 0; index < count; index++) {
  const id = `toolu_js_${protocol}_${index}`;
  const body = badText === "bad-text" && index === 1 ? "broken \ud800 text" : "工具结果";
  logger.emit({
    eventName: "claude_code.tool_result",
    body,
    attributes: { "session.id": `js-${protocol}`, tool_use_id: id, tool_result_size_bytes: 100 + index },
  });
  console.log(id);
}
await provider.forceFlush();
await provider.shutdown();
