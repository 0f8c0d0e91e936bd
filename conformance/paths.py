"""Where the suite's data lives: the package's own YAML, and the schemas and
vectors folders at the top of the checkout (an editable install)."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
SCHEMAS = ROOT / "schemas"
VECTORS = ROOT / "vectors"
RUNNERS = ROOT / "runners"
REQUIREMENTS = PACKAGE / "requirements.yaml"
RULINGS = PACKAGE / "rulings.yaml"
