"""Remedies the seeds describe — clipping, row and structured selection, pagination,
spill-and-fetch, emergency trim — each of which declares what it removed."""
