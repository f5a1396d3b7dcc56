"""``python -m spectheory``: the command line (:func:`spectheory.app.cli.main`), the same as the
``spectheory`` console script."""

import sys

from .app.cli import main

if __name__ == "__main__":
    sys.exit(main())
