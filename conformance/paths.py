"""Where the suite's data lives: everything ships inside the package, so a
wheel install finds it the same way a checkout does.

Runners are launched as `python path/to/shim.py`, so they need real paths; an
installed package (wheel or editable) is a directory on disk, which is what
`Path(str(...))` assumes. A zipped install is not supported."""

from importlib.resources import files
from pathlib import Path

PACKAGE = Path(str(files("conformance")))
DATA = PACKAGE / "data"
SCHEMAS = DATA / "schemas"
VECTORS = DATA / "vectors"
RUNNERS = PACKAGE / "runners"
REQUIREMENTS = PACKAGE / "requirements.yaml"
RULINGS = PACKAGE / "rulings.yaml"
