"""``python -m urlcheck``: the ``urlcheck`` command."""

import sys

from urlcheck.cli import main

sys.exit(main())
