"""A stdio MCP server with one tool, ``fetch``, that returns COUNT records as text: what
a real MCP server gives Claude Code in the end-to-end tests (JSON-RPC 2.0, one message
per line, as the MCP stdio transport frames it).

    python records_mcp_server.py COUNT
"""

from __future__ import annotations

import json
import sys
from typing import Any


def records(count: int) -> str:
    return "\n".join(f"record {index:05d}" for index in range(count))


def _answer(message: dict[str, Any], count: int) -> dict[str, Any] | None:
    method = message.get("method")
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-06-18")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "records", "version": "1"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "properties": {}}
        result = {
            "tools": [{"name": "fetch", "description": "Fetch the records", "inputSchema": schema}]
        }
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": records(count)}]}
    elif "id" in message:
        result = {}
    else:  # a notification
        return None
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


def main() -> None:
    count = int(sys.argv[1])
    for line in sys.stdin:
        answer = _answer(json.loads(line), count)
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
