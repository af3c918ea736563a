"""Every op definition, one module per family. ``engine.ops.NAME`` is the public
function and ``engine.ops.NAME_op`` the registry entry.

Modules are imported in dependency order; VJPs refer to other ops through this
package at call time, so the order only matters for import-time references.
"""
from .elementwise import *  # noqa: F401,F403
from .elementwise import abs, pow  # noqa: F401  (shadow builtins on purpose)
from .compare import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .reduce import sum, max, min  # noqa: F401
from .shape_ops import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .join import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from ._define import unbroadcast  # noqa: F401
