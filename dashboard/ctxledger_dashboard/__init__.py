"""The ctxledger dashboard: browse drops per agent step (issue 4).

Not built yet; this package exists so the wheel layout is final from the start.
"""
