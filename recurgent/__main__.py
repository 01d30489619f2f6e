"""``python -m recurgent``: the ``recurgent`` console script (ADR 0115)."""

from __future__ import annotations

import sys

from recurgent._cli import main

if __name__ == "__main__":
    sys.exit(main())
