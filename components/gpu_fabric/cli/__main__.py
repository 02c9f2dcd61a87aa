"""``python -m gpu_fabric.cli`` runs the same command line as the console script."""

import sys

from gpu_fabric.cli import console_main

sys.exit(console_main())
