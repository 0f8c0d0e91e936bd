"""Reports: the verdict, and its console, JSON, JUnit, Markdown and badge forms."""
