"""`python -m netdsl.cli`: the same as the `netdsl` command."""

import sys

from netdsl.cli import main

sys.exit(main())
