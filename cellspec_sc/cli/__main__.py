"""``python -m cellspec_sc.cli ...`` runs the ``cellspec`` command (e.g. ``python -X importtime -m cellspec_sc.cli
--help`` shows what a command imports)."""

import sys

from cellspec_sc.cli.main import main

sys.exit(main())
