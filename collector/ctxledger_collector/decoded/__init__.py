"""Decoded: the records every step hands down.

What decoding produces and the judge and storage consume: decoded measurements, manifests
and batches, the calls responses issued, tool outputs waiting for their call, and the
rejection vocabulary.

Imports nothing of the collector: it is the bottom of the flow.
"""
