"""What docs/alerting.md's webhook receiver takes from the reader's environment: the
signing secret(s) of the rules file, in CTXLEDGER_WEBHOOK_SECRET."""

import os

from ctxledger.webhooks import generate_secret

os.environ["CTXLEDGER_WEBHOOK_SECRET"] = generate_secret()
