"""Every op definition, one module per family. ``engine.ops.NAME`` is the public
function and ``engine.ops.NAME_op`` the registry entry.

Each family imports the families its rules call (``from . import compare``),
never this package, so the families form a hierarchy with no cycle:
``creation``, ``shape_ops``, ``misc`` and ``conv`` import no family;
``compare`` builds on ``creation``, ``elementwise`` on ``compare``, ``reduce``
on those and ``shape_ops``; ``math_unary``, ``math_binary`` and ``bitwise``
(more elementwise math) on ``elementwise`` and ``reduce``; ``indexing`` (and ``join`` on it), ``linalg`` and
the composites in ``nn`` sit on top.
``_define.unbroadcast`` (used by every family) sums and reshapes through the
cotangent's own methods, since the reductions' VJPs broadcast.
"""
from .elementwise import *  # noqa: F401,F403
from .elementwise import abs, pow  # noqa: F401  (shadow builtins on purpose)
from .compare import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .reduce import sum, max, min  # noqa: F401
from .shape_ops import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from . import linalg_solve, linalg_spectral  # noqa: F401  (registry entries of engine.linalg)
from .misc import *  # noqa: F401,F403
from .join import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .index_update import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from ._define import unbroadcast  # noqa: F401
from .activations import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .numpy_names import *  # noqa: F401,F403
from .cumulative import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .spacing import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .math_unary import *  # noqa: F401,F403  (round shadows the builtin on purpose)
from .math_binary import *  # noqa: F401,F403  (divmod too)
from .bitwise import *  # noqa: F401,F403
from .resize import *  # noqa: F401,F403
from .complex_parts import *  # noqa: F401,F403
from .numpy_ufuncs import *  # noqa: F401,F403
from .numpy_ufuncs_binary import *  # noqa: F401,F403
from .numpy_ufunc_composites import *  # noqa: F401,F403
from . import fft_transforms  # noqa: F401  (registry entries of engine.fft)
from .stacking import *  # noqa: F401,F403
from .rearranging import *  # noqa: F401,F403
from .nan_reductions import *  # noqa: F401,F403
from .statistics_quantiles import *  # noqa: F401,F403
from .scatter import *  # noqa: F401,F403
from .rank_select import *  # noqa: F401,F403
from .statistics_moments import *  # noqa: F401,F403
from .picking import *  # noqa: F401,F403
from .histograms import *  # noqa: F401,F403
from .set_functions import *  # noqa: F401,F403
from .index_helpers import *  # noqa: F401,F403
from .array_facts import *  # noqa: F401,F403
from .calculus import *  # noqa: F401,F403
from .numeric_helpers import *  # noqa: F401,F403
from .polynomials import *  # noqa: F401,F403
from .logcumsumexp import *  # noqa: F401,F403
from .functional_apply import *  # noqa: F401,F403
from .trunc_divide import *  # noqa: F401,F403
from .windows import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
