"""Entry point of the worker process: ``python -I -m recurgent._worker [--site-packages DIR]``."""

from __future__ import annotations

import sys

from recurgent._worker._child import main

if __name__ == "__main__":
    sys.exit(main())
