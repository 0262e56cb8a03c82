"""An agent on the Claude Agent SDK, audited with no ctxledger SDK: Claude Code's own
telemetry, turned on through the agent's options, goes to the collector, which judges
every tool result from it (docs/zero-sdk.md, "Claude Code").

    pip install claude-agent-sdk
    ctxledger up                 # the collector on :4318 and the dashboard
    python examples/claude_agent_sdk_agent.py "Count the lines of /etc/services with Bash."

``--collector URL`` (default http://127.0.0.1:4318); ``--base-url URL`` for a model
server other than Anthropic's (``ctxledger provider`` serves a scripted stand-in, any
key); ``--bodies-dir DIR`` writes each request body to a file in DIR instead of into the
log event (then run the collector with ``--read-bodies-from DIR``). It prints the
answer, and the session id (the run's id in ctxledger, without its dashes).

Needs only ``claude-agent-sdk`` (it runs the Claude Code it bundles), not ctxledger.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query


def telemetry_env(collector: str, bodies_dir: str | None) -> dict[str, str]:
    """Claude Code's telemetry on, with what the audit reads: tool outputs on its spans,
    request bodies whole (inline up to 1 MB, or in files) in its log events."""
    return {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector,
        "OTEL_LOG_TOOL_DETAILS": "1",
        "OTEL_LOG_TOOL_CONTENT": "1",
        "OTEL_LOG_RAW_API_BODIES": f"file:{bodies_dir}" if bodies_dir else "1",
        "CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH": "1000000",
    }


async def run(args: argparse.Namespace) -> int:
    env = telemetry_env(args.collector, args.bodies_dir)
    if args.base_url:
        env["ANTHROPIC_BASE_URL"] = args.base_url
    options = ClaudeAgentOptions(allowed_tools=["Bash"], env=env, model=args.model, cwd=args.cwd)
    failed = False
    async for message in query(prompt=args.prompt, options=options):
        if isinstance(message, ResultMessage):
            print(message.result or "")
            print(f"session {message.session_id}", file=sys.stderr)
            failed = message.is_error
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt")
    parser.add_argument("--collector", default="http://127.0.0.1:4318")
    parser.add_argument("--base-url", help="the model server (ANTHROPIC_BASE_URL)")
    parser.add_argument("--bodies-dir", help="write request bodies to files here")
    parser.add_argument("--model", default="claude-sonnet-4-6")
    parser.add_argument("--cwd", help="the agent's working directory")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
