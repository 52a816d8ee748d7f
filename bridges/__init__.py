"""Bridges from cellspec to the scverse ecosystem (AnnData, SpatialData) and to Luxar scenes."""
