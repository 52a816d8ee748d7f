"""``python -m cellspec_sc.docgen`` rewrites the generated tables in ``docs/``."""

import sys

from cellspec_sc.docgen._render import main

sys.exit(main())
