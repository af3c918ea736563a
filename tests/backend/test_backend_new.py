"""A new back end is one file, one registration line and the parametrized back-end
tests: the back end of docs/extending/backend.md (``array_api_strict`` under another
name, defined here), registered, then the op-database suite of ``support.backend_suite``
(the one ``test_backend_strict.py`` runs) on it, eagerly and in graphs, with gradients."""
import inspect
import os
import re

import array_api_strict as xps
import numpy as np
import pytest

import engine as en
from engine.backend.base import Backend
from support.backend_suite import GRAD_ENTRIES, check_op_db, check_op_db_gradients, op_db_cases
from support.paths import REPO

# ---- the back end (as docs/extending/backend.md shows it) ------------------------------
# The engine's dtypes (numpy's) and the library's; the standard has no float16.
NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128")
TO_XP = {np.dtype(n): getattr(xps, n) for n in NAMES}
TO_NP = {xp: np_ for np_, xp in TO_XP.items()}


class StrictCopy(Backend):
    name = "strict_copy"
    xp = xps                                  # the Array API namespace
    array_types = (type(xps.asarray(0)),)
    # Capabilities: none declared, so every fast path stays off (no out=, no
    # buffer reuse, no fused loops, no compiled lowerings).

    def asarray(self, data, dtype=None):      # always a fresh copy
        if self.is_array(data):
            data = self.to_numpy(data)
        return self.from_numpy(np.array(data, dtype=dtype))

    def from_numpy(self, array):
        return xps.asarray(np.array(array, copy=True), dtype=self.dtype(array.dtype))

    def to_numpy(self, array):
        return np.from_dlpack(array)          # the standard's way out: DLPack

    def dtype_of(self, array):
        return TO_NP[array.dtype]

    def dtype(self, dtype):                   # the library's dtype for an engine dtype
        if np.dtype(dtype) not in TO_XP:
            raise en.DTypeError(f"unsupported dtype {np.dtype(dtype)} on back end {self.name}")
        return TO_XP[np.dtype(dtype)]


en.backend.get("array_api_strict")    # its arrays' owner, registered first
en.backend.register_backend(StrictCopy())    # the one registration line
NEW = StrictCopy.name


# ---- the parametrized back-end tests, on it --------------------------------------------
@pytest.mark.parametrize("info,dtype,graph", list(op_db_cases()))
def test_op_db_on_a_new_backend_matches_numpy(info, dtype, graph):
    check_op_db(info, dtype, graph, NEW)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("info", GRAD_ENTRIES, ids=[i.name for i in GRAD_ENTRIES])
def test_op_db_gradients_on_a_new_backend_match_numpy(info, graph):
    check_op_db_gradients(info, graph, NEW)


def test_every_registered_op_has_a_kernel_on_the_new_backend():
    report = en.backend.kernel_report()[NEW]
    assert report["missing"] == [] and report["override"] == []
    assert set(report["generic"]) == set(en.REGISTRY)


def test_its_tensors_are_its_own_and_never_mix_with_strict_ones():
    x = en.tensor([1.0, 2.0], backend=NEW)
    assert x.backend.name == NEW and (x * 2.0).backend.name == NEW
    assert en.tensor(xps.asarray([1.0])).backend.name == "array_api_strict"
    with pytest.raises(en.BackendError, match="strict_copy and array_api_strict"):
        x + en.tensor([1.0, 2.0], backend="array_api_strict")
    report = en.function(lambda a: en.sum(en.exp(a) * 2.0)).optimization_report(x).as_data()
    assert not {"fusion", "memory_planning"} & {r["name"] for r in report}


def test_the_docs_page_shows_this_back_end():
    with open(os.path.join(REPO, "docs", "extending", "backend.md"), encoding="utf-8") as f:
        page = f.read()
    (script,) = re.findall(r"```python\n# strict_copy.py\n(.*?)```", page, flags=re.S)
    for part in (inspect.getsource(StrictCopy), "NAMES = (", "TO_XP = ", "TO_NP = "):
        assert part.split("\n")[0] in script
    assert inspect.getsource(StrictCopy) in script
