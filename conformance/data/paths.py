"""Where the suite's data lives. In a checkout the public folders sit at the top
of the repository, beside the package: schemas/, vectors/, runners/ and
examples/, the part a language-neutral implementer reads and copies. A wheel
carries the same folders inside the package, under conformance/shipped/
(pyproject.toml maps them there), so an install finds them the same way.

Runners are launched as `python path/to/shim.py`, so they need real paths; an
installed package (wheel or editable) is a directory on disk, which is what
`Path(str(...))` assumes. A zipped install is not supported."""

from importlib.resources import files
from pathlib import Path

PACKAGE = Path(str(files("conformance")))
SHIPPED = PACKAGE / "shipped"
# A wheel's copy when there is one, else the checkout's top level (a source tree or an editable install).
PUBLIC = SHIPPED if SHIPPED.is_dir() else PACKAGE.parent
SCHEMAS = PUBLIC / "schemas"
VECTORS = PUBLIC / "vectors"
RUNNERS = PUBLIC / "runners"
EXAMPLES = PUBLIC / "examples"
REQUIREMENTS = PACKAGE / "requirements.yaml"
RULINGS = PACKAGE / "rulings.yaml"
SENTENCES = PACKAGE / "sentences.yaml"
