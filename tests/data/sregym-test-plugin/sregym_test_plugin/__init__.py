#: entry-point modules whose import was attempted (a blocked plugin must never appear here)
IMPORT_ATTEMPTS: list[str] = []
