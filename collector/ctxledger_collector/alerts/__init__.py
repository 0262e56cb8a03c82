"""Alerting: rules that turn journey verdicts into notifications, and where they go.

May import: ``storage``, ``decoded``. The judge raises alert events through
:mod:`.events`; forwarding shares :mod:`.destination_guard`.
"""
