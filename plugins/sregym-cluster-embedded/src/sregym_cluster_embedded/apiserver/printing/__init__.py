"""Server-side Table printing, split by kind family; :mod:`..printers` is the public facade."""
