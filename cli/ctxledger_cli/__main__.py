"""``python -m ctxledger_cli``: the ``ctxledger`` command."""

import sys

from ctxledger_cli.main import main

sys.exit(main())
