"""Under bitwise numerics, einsum and tensordot of a column-ordered value give the bits of
its C-ordered copy (numpy pairs a reduction's terms by the layout, and the compiled
lowerings hold values C-ordered), so eager and en.function agree bit for bit."""
import numpy as np
import pytest

import engine as en
from support.bitwise import numerics

SPECS = [("ij->j", 1), ("ij->i", 1), ("ij,ij->", 2), ("ij,jk->ik", 2), ("ji,ij->i", 2)]


def _operands(spec, a, b):
    column_ordered = en.transpose(en.tensor(np.ascontiguousarray(a.T)))   # a's values
    if spec == "ij,ij->":
        return [column_ordered, en.tensor(a[::-1].copy())]
    if spec == "ij,jk->ik":
        return [column_ordered, en.tensor(b)]
    if spec == "ji,ij->i":
        return [en.tensor(b), column_ordered]
    return [column_ordered]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5), (300, 37), (1000, 3)])
@pytest.mark.parametrize("spec, n", SPECS)
@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_einsum_of_a_column_ordered_value_gives_its_copys_bits(lowering, spec, n, shape, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape[::-1]).astype(dtype)
    operands = _operands(spec, a, b)
    copies = [en.tensor(np.ascontiguousarray(t.numpy())) for t in operands]
    with numerics("bitwise", lowering=lowering):
        eager = en.einsum(spec, *operands).numpy()
        np.testing.assert_array_equal(eager, en.einsum(spec, *copies).numpy())
        graph = en.function(lambda *t: en.einsum(spec, *t))
        np.testing.assert_array_equal(graph(*copies).numpy(), eager)
    np.testing.assert_allclose(eager, np.einsum(spec, *[t.numpy() for t in operands]),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensordot_of_a_transposed_view_gives_its_copys_bits(dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 37)).astype(dtype)
    b = rng.standard_normal((300,)).astype(dtype)
    view = en.transpose(en.tensor(np.ascontiguousarray(a.T)))
    with numerics("bitwise"):
        eager = en.tensordot(en.tensor(b), view, axes=1).numpy()
        copy = en.tensordot(en.tensor(b), en.tensor(a), axes=1).numpy()
    np.testing.assert_array_equal(eager, copy)
    np.testing.assert_allclose(eager, np.tensordot(b, a, axes=1), rtol=1e-4, atol=1e-4)
