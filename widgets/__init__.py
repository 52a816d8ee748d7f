"""Notebook widgets that preview a cellspec object inline."""
