"""``python -m cellspec_sc.docgen`` rewrites the generated tables in ``docs/``."""

import sys

from cellspec_sc.docgen import main

sys.exit(main())
