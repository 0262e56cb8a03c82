"""The local MCP server of :mod:`.mcp_tickets` (stdio): a support-ticket search whose
answer is large, as real MCP tools' often are, and a small lookup of one ticket.

    python -m ctxledger_cli.agents.mcp_ticket_server   # speaks MCP on stdin/stdout
"""

from __future__ import annotations

import json

from mcp.server.fastmcp import FastMCP

server = FastMCP("tickets", log_level="WARNING")


def _ticket(n: int, product: str) -> dict[str, str]:
    return {
        "id": f"T-{n:04d}",
        "product": product,
        "priority": "P1" if n % 50 == 7 else "P3",
        "title": f"{product}第 {n} 次连接失败 (connection lost)",
    }


@server.tool()
def query_tickets(product: str) -> str:
    """Every open support ticket of a product."""
    tickets = [_ticket(n, product) for n in range(300)]
    return json.dumps({"results": tickets}, ensure_ascii=False)


@server.tool()
def get_ticket(ticket_id: str) -> str:
    """One ticket with its assignee and its last update."""
    number = int("".join(c for c in ticket_id if c.isdigit()) or 0)
    ticket = {
        **_ticket(number, "扫码枪"),
        "assignee": "小陈",
        "last_update": "2026-12-01T08:40Z 已更换 USB 线，待客户确认",
    }
    return json.dumps(ticket, ensure_ascii=False)


if __name__ == "__main__":
    server.run("stdio")
