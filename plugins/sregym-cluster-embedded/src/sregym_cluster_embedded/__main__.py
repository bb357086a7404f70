"""``python -m sregym_cluster_embedded serve --name N --nodes K``: run one cluster in the foreground.

The other subcommands (up, down, status, kubeconfig) are the ``sregym cluster`` commands.
"""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
