"""A Claude Code ``PostToolUse`` hook that keeps the first LIMIT characters of an MCP
tool's text and says nothing: the silent cut a context-saving hook makes, which the
tests expect ctxledger to find from Claude Code's own telemetry.

    python cut_mcp_output_hook.py LIMIT
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    limit = int(sys.argv[1])
    event = json.load(sys.stdin)
    blocks = event.get("tool_response")
    text = (
        "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        if isinstance(blocks, list)
        else str(blocks)
    )
    cut = [{"type": "text", "text": text[:limit]}]
    output = {"hookEventName": "PostToolUse", "updatedMCPToolOutput": cut}
    print(json.dumps({"hookSpecificOutput": output}))


if __name__ == "__main__":
    main()
