"""Tarantula: a configurable, polite, resumable web crawler and site mirror."""

__version__ = "0.1.0"
