"""fabtwin, the app: the command line, the TUI and the report."""

import replay.results  # noqa: F401  the store then creates replay's result tables (see there)
