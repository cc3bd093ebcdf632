"""python -m fakekey: the same as fakekey-server."""

import sys

from fakekey.cli import main

sys.exit(main())
