"""A pytest plugin that runs third-party Array API test suites on one namespace.

Loaded by tests/interop/third_party_suites.py with ``-p third_party_plugin``;
``THIRD_PARTY_NAMESPACE`` names the namespace: ``engine.array_api`` (the run
checked against the expected failures) or ``array_api_strict`` (the baseline
it is compared with). Each suite chooses its array libraries its own way:

* scikit-learn: ``sklearn.utils._array_api.yield_namespaces`` and
  ``yield_namespace_device_dtype_combinations``, read when a test module is
  imported, are replaced before collection, so its tests are parametrized by
  the one namespace (float64 and float32, as for array-api-strict).
* SciPy: its ``xp`` fixture's parameters are fixed when ``scipy/conftest.py`` is
  defined, so the fixture is replaced as that conftest is registered, before
  pytest reads its fixtures. The engine is treated as SciPy treats any CPU,
  eager library it does not know: ``np_only`` markers skip it, markers naming
  another library do not. (The baseline uses SciPy's own fixture.)
* array-api-extra: its ``library`` fixture iterates over its ``Backend`` enum;
  the engine becomes one more member, ``Backend.ENGINE``, the only parameter,
  and its ``xp`` fixture imports ``Backend.ENGINE.modname`` as for any other.
"""
import contextlib
import importlib
import os

import pytest

NAMESPACE = os.environ.get("THIRD_PARTY_NAMESPACE", "engine.array_api")
ENGINE = NAMESPACE == "engine.array_api"


def _patch_sklearn():
    try:
        from sklearn.utils import _array_api
    except ImportError:
        return

    def yield_namespaces(include_numpy_namespaces=True):
        yield NAMESPACE

    def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
        # array-api-strict's pairs as sklearn yields them; the engine has one device
        device = (None, None) if ENGINE else ("CPU_DEVICE", "device1")
        yield NAMESPACE, device[0], "float64"
        yield NAMESPACE, device[1], "float32"

    _array_api.yield_namespaces = yield_namespaces
    _array_api.yield_namespace_device_dtype_combinations = (
        yield_namespace_device_dtype_combinations)


def _add_engine_backend(backend_enum):
    """``Backend.ENGINE``: an Enum takes no new member after its class is made, so the
    member is built as Enum's own constructor builds one and entered in its tables."""
    if "ENGINE" in backend_enum.__members__:
        return backend_enum.ENGINE
    member = object.__new__(backend_enum)
    member._name_, member._value_ = "ENGINE", "engine.array_api"
    member.__objclass__ = backend_enum
    backend_enum._member_map_["ENGINE"] = member
    backend_enum._value2member_map_["engine.array_api"] = member
    backend_enum._member_names_.append("ENGINE")
    type.__setattr__(backend_enum, "ENGINE", member)
    return member


def _scipy_xp_fixture(conftest):
    """SciPy's ``xp`` fixture with the engine as its one parameter."""
    import engine.array_api as xp_module

    @pytest.fixture(params=[pytest.param(xp_module, id="engine",
                                         marks=pytest.mark.array_api_backends)])
    def xp(request):
        for kind in ("skip", "xfail"):
            for marker in request.node.iter_markers(f"{kind}_xp_backends"):
                if (marker.kwargs.get("np_only")
                        and "engine" not in marker.kwargs.get("exceptions", ())):
                    getattr(pytest, kind)(reason=marker.kwargs.get("reason")
                                          or "do not run with non-NumPy backends")
        with conftest.default_xp(xp_module):
            yield xp_module
    return xp


def _aae_library_fixture(conftest):
    """array-api-extra's ``library`` fixture over ``Backend.ENGINE`` (or the baseline,
    ``Backend.ARRAY_API_STRICT``) alone; its markers apply as for any backend."""
    backend_enum = conftest.Backend
    chosen = _add_engine_backend(backend_enum) if ENGINE else backend_enum.ARRAY_API_STRICT
    original = conftest.library

    @pytest.fixture(params=[pytest.param(chosen, id=chosen.name.lower())])
    def library(request):
        return original.__wrapped__(request)   # its markers' skips and xfails
    return library


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin, manager):
    """Replace a suite's fixtures as its conftest registers, before pytest reads them."""
    name = getattr(plugin, "__name__", "")
    if not name.endswith("conftest"):
        return
    if name == "scipy.conftest" and ENGINE:
        plugin.xp = _scipy_xp_fixture(plugin)
    elif hasattr(plugin, "Backend") and hasattr(plugin, "library"):   # array-api-extra
        plugin.library = _aae_library_fixture(plugin)


def pytest_configure(config):
    _patch_sklearn()
    with contextlib.suppress(ImportError):   # engine.array_api loads before any test
        importlib.import_module(NAMESPACE)
