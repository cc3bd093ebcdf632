"""Pure encodings and algorithms: numbers, errors, glob, geohash, HyperLogLog,
long doubles, DEBUG DIGEST. They import nothing of the server."""
