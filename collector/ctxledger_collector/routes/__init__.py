"""Routes: the HTTP surface, one module per resource, and the state they share.

The top of the flow, below ``app`` and ``serve``: may import every step below it
(``ops`` and everything under it); never the app or ``serve``, and nothing below imports
``routes``.
"""
