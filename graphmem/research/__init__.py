"""Point-in-time research: panels (many frames and cutoffs in a few statements),
DataFrames of graphmem's results, and standardized line items chosen per company
from what was public by each cutoff.

``graphmem.research.panel`` builds panels, ``graphmem.research.frames`` converts
results to Arrow, pandas and polars (the optional extra ``dataframes``), and
``graphmem.research.lineitems`` holds the line-item families.
"""
