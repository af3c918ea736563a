"""The whole op database on the ``array_api_strict`` back end, eagerly and in graphs
(the suite is ``support.backend_suite``; a new back end runs it too).

``array_api_strict`` has nothing beyond the Array API standard, so an op
that needed numpy beyond the back-end interface would fail here. For every
entry, dtype and sample the op runs on strict tensors (eagerly and inside
``en.function``); its results must live on the strict back end and equal the
numpy reference to the op database's tolerances. Where the op database checks
gradients, the gradients on the strict back end (a tape eagerly, ``en.grad``
inside a graph) must equal those on the numpy back end to the same tolerances.
"""
import pytest

import engine as en
from op_db import ALL_ENTRIES
from support.backend_suite import GRAD_ENTRIES, check_op_db, check_op_db_gradients, op_db_cases

STRICT = "array_api_strict"


@pytest.mark.parametrize("info,dtype,graph", list(op_db_cases()))
def test_op_db_on_strict_matches_numpy(info, dtype, graph):
    check_op_db(info, dtype, graph, STRICT)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("info", GRAD_ENTRIES, ids=[i.name for i in GRAD_ENTRIES])
def test_op_db_gradients_on_strict_match_numpy(info, graph):
    check_op_db_gradients(info, graph, STRICT)


def test_every_registered_op_has_a_kernel_on_strict():
    report = en.backend.kernel_report()
    assert report[STRICT]["missing"] == []
    assert set(report[STRICT]["generic"]) | set(report[STRICT]["override"]) == set(en.REGISTRY)


def test_every_registered_op_is_in_the_loop_above():
    names = {info.name for info in ALL_ENTRIES}
    assert set(en.REGISTRY) <= names, sorted(set(en.REGISTRY) - names)
