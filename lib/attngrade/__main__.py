"""``python -m attngrade``: the same as the ``attngrade`` command."""

import sys

from .cli import main

sys.exit(main())
