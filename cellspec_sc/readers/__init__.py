"""Tool readers: one pipeline (pipeline.py) and one adapter module per tool (QuPath, MCMICRO)."""
