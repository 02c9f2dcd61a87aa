"""Shared test setup: the tests folder is importable (``import policy_helpers``), and paths to shared facts."""

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).parent
PROJECT_DIR = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))
