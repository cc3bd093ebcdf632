"""Data structures behind the non-string types."""
