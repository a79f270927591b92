"""Showing a report: in the terminal (``terminal``), as charts (``charts``) and as a self-contained
design-review page (``html``)."""
