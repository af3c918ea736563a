"""Op-database entries for the composites of engine/ops/numpy_names.py: ``all`` and
``any`` against numpy (``concatenate`` and ``power`` are ``concat`` and ``pow``, whose
entries test them)."""
import numpy as np

import engine as en

from op_db.core import ALL, ErrorInput, OpInfo, Sample, composite, make


def _truth_samples(dtype, rng):
    for shape, kw in [((), {}), ((5,), {}), ((3, 4), dict(axis=0)), ((3, 4), dict(axis=1)),
                      ((2, 3, 4), dict(axis=(0, 2), keepdims=True)), ((0, 3), dict(axis=0)),
                      ((0,), {})]:
        x = make(rng, shape, dtype, low=-1.0, high=1.0)    # ints: -1, 0, 1, so some zeros
        yield Sample((x,), kw)
    yield Sample((np.zeros((2, 3), dtype),), dict(axis=1), desc="all zero")
    yield Sample((np.ones((2, 3), dtype),), {}, desc="none zero")


def _errors():
    return [ErrorInput(Sample((np.ones((2, 3)),), dict(axis=2)), en.ShapeError, "sum")]


for _name, _ref in (("all", np.all), ("any", np.any)):
    composite(OpInfo(_name, getattr(en, _name), _ref, _truth_samples, ALL, supports_grad=False,
                     error_inputs=_errors))
