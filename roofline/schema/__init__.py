"""The data that crosses the tool's boundaries: a machine's profile (``profile``) and the report of
an analysis (``report``), each one validated pydantic schema with a version."""
