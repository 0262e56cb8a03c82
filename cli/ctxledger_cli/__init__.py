"""The ``ctxledger`` command: the entry points above the SDK, the collector and the
dashboard, and the only package that imports them all.

``ctxledger demo`` runs on the plain install (SDK only); ``serve``, ``up``,
``dashboard``, ``db`` and ``alerts`` need the ``[server]`` extra
(``pip install -c constraints.txt '.[server]'`` in the clone).
"""
