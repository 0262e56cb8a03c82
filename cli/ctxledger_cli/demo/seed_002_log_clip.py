"""Seed 002's data: a 500-line pay-service log whose error stack sits at the very end,
and the clip the seed recommends (head 40 + tail 20 lines, a visible marker between).
The log agent on the OpenAI Agents SDK (:mod:`ctxledger_cli.agents.openai_agents_log`)
reads it; the demo runs that agent with the clip (``declared``)."""

from __future__ import annotations

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


def pay_service_log() -> str:
    """Seed 002's log: 500 lines, the error stack at the very end."""
    lines = [_log_line(i) for i in range(500 - len(_ERROR_STACK))]
    return "\n".join([*lines, *_ERROR_STACK])
