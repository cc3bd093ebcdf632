"""RESP: requests in, typed replies out, for RESP2 and RESP3."""
