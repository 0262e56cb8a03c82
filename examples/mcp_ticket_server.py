"""The local MCP server of ``mcp_agent.py`` (stdio): a support-ticket search whose
answer is large, as real MCP tools' often are.

    python examples/mcp_ticket_server.py   # speaks MCP on stdin/stdout
"""

from __future__ import annotations

import json

from mcp.server.fastmcp import FastMCP

server = FastMCP("tickets", log_level="WARNING")


@server.tool()
def query_tickets(product: str) -> str:
    """Every open support ticket of a product."""
    tickets = [
        {"id": f"T-{n:04d}", "product": product, "priority": "P1" if n % 50 == 7 else "P3",
         "title": f"扫码枪第 {n} 次连接失败 (connection lost)"}
        for n in range(300)
    ]  # fmt: skip
    return json.dumps({"results": tickets}, ensure_ascii=False)


if __name__ == "__main__":
    server.run("stdio")
