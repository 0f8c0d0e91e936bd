"""The engine: turn data into scenarios, drive a role through a binding, and
judge what was observed against the requirements."""
