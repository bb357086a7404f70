"""My App: a frontend and a backend talking HTTP, the backend's data in one PostgreSQL.

The app template (docs/adding-an-app.md): every part an SREGym app needs, built on
``sregym_appkit``. One package, one image: ``python -m sregym_app_myapp.serve frontend|backend|load-generator``.
"""

from __future__ import annotations

__version__ = "0.1.0"
IMAGE_REPO = "sregym/myapp"
IMAGE_TAG = "1.0"
