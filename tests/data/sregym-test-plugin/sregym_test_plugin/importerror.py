import sregym_test_plugin

sregym_test_plugin.IMPORT_ATTEMPTS.append(__name__)

import sregym_this_module_does_not_exist  # noqa: E402, F401
