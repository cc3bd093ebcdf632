"""The EMQ.* verbs of the emulated `trafikey` module (docs/emq.md is the reference).

`layout.py` is the calling convention and its checks, `host.py` the built-in operations
the verbs are made of; each other module declares a family of verbs. The family modules
are listed in `fakekey.commands.FAMILIES`, like the built-ins'.
"""
