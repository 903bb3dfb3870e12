"""`python3 Tools/benchlib`: runs the bench (Tools/bench does, after installing and building what it needs)."""
import sys
from pathlib import Path

# Run as a directory, this file is not inside its package: make Tools/ importable, then import the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchlib.main import main  # noqa: E402

main()
