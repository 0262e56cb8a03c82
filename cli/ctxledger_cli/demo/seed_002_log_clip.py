"""Seed 002: a 500-line log clipped to head 40 + tail 20 with a visible marker. The model
sees the marker and the error stack at the end: a declared, harmless cut."""

from __future__ import annotations

import ctxledger
from ctxledger_cli.demo.agent_loop import (
    DEFAULT_MODEL,
    Message,
    assistant_calls,
    send,
    tool_call,
    tool_message,
)

LOG_CALL_ID = "call_log_002"

LOG_PATH = "/var/log/pay/pay-service.log"
LOG_HEAD_LINES, LOG_TAIL_LINES = 40, 20
_ERROR_STACK = (
    "2026-03-14 03:11:58.412 ERROR [pay-worker-3] 支付回调处理失败 order=A-10488 channel=wechat",
    "java.lang.IllegalStateException: 数据库连接池已耗尽 (active=200, max=200, waiting=57)",
    "\tat com.shop.pay.db.PoolGuard.acquire(PoolGuard.java:88)",
    "\tat com.shop.pay.db.TxTemplate.execute(TxTemplate.java:41)",
    "\tat com.shop.pay.callback.WechatCallbackHandler.handle(WechatCallbackHandler.java:132)",
    "\tat com.shop.pay.callback.CallbackDispatcher.dispatch(CallbackDispatcher.java:67)",
    "Caused by: java.sql.SQLTransientConnectionException: 获取连接超时 30000ms",
    "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)",
    "\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:181)",
    "2026-03-14 03:11:59.020 ERROR [pay-worker-1] 支付回调处理失败 order=A-10489 同上",
    "2026-03-14 03:12:00.003 WARN  [supervisor] 健康检查连续 3 次失败，重启 pay-service",
    "2026-03-14 03:12:04.771 INFO  [main] pay-service 启动完成，耗时 4.2s",
)


def _log_line(i: int) -> str:
    minutes, seconds = divmod(7200 + i * 8, 60)
    hours, minutes = divmod(minutes, 60)
    channel = ("wechat", "alipay", "unionpay")[i % 3]
    return (
        f"2026-03-14 {hours:02d}:{minutes:02d}:{seconds:02d}.{i * 37 % 1000:03d} INFO  "
        f"[pay-worker-{i % 4}] 支付回调处理完成 order=A-{10000 + i} channel={channel} "
        f"耗时={8 + i * 7 % 40}ms"
    )


@ctxledger.tool
def read_log(path: str) -> str:
    """Seed 002's log tool: ~500 lines, the error stack at the very end."""
    lines = [_log_line(i) for i in range(500 - len(_ERROR_STACK))]
    return "\n".join([*lines, *_ERROR_STACK])


def clip_head_tail(text: str, head: int = LOG_HEAD_LINES, tail: int = LOG_TAIL_LINES) -> str:
    """Seed 002's clipper: head and tail kept, the middle replaced by a visible marker."""
    lines = text.splitlines()
    if len(lines) <= head + tail:
        return text
    omitted = len(lines) - head - tail
    marker = (
        f"…[已截断：共 {len(lines)} 行，省略中间 {omitted} 行；可用 offset/pattern 参数查看更多]…"
    )
    return "\n".join([*lines[:head], marker, *lines[-tail:]])


def seed_002_log_clip(model: str = DEFAULT_MODEL) -> None:
    """A declared head+tail clip: the model sees the marker and the error stack."""
    with ctxledger.run("log-agent"):
        messages: list[Message] = [
            {"role": "system", "content": "你负责排查线上故障。只看到部分日志时要明确说明。"},
            {"role": "user", "content": f"支付服务 03:12 为什么重启了？日志在 {LOG_PATH}。"},
        ]
        send(messages, model)  # step 1: the model asks for the log
        messages.append(assistant_calls(tool_call(LOG_CALL_ID, "read_log", {"path": LOG_PATH})))
        clipped = clip_head_tail(read_log(LOG_PATH, tool_call_id=LOG_CALL_ID))
        ctxledger.measure(
            "clipped",
            clipped,
            tool_call_id=LOG_CALL_ID,
            tool_name="read_log",
            order=25,
            declared=True,
            strategy="head_tail",
        )
        messages.append(tool_message(LOG_CALL_ID, clipped))
        send(messages, model)  # step 2: head, marker and the stack reach the model
