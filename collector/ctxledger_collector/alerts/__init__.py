"""Alerting: rules that turn journey verdicts into notifications, and where they go."""
