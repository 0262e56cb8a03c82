"""Routes: the HTTP surface, one module per resource, and the state they share.

The top of the flow with ``app`` and ``serve``: may import every package of the collector;
nothing in them imports ``routes`` or the app.
"""
