"""Adapters that read tool exports (QuPath, MCMICRO) into cellspec objects."""
