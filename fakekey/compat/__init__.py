"""Compatibility layers: the fakeredis drop-in."""
