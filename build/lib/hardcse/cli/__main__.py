"""``python -m hardcse.cli``: the same as the ``hardcse`` command."""

import sys

from hardcse.cli import main

sys.exit(main())
