"""Op-database entries for the random ops (``engine/random.py``): pure functions of an
int64 key [seed, counter]; the reference draws from the same numpy generator."""
import numpy as np

import engine as en

from op_db.core import F32, ErrorInput, OpInfo, Sample, add, op_dtypes


def _key_rng(key):
    return np.random.default_rng(np.asarray(key, dtype=np.int64).view(np.uint64))


def _normal_ref(key, shape, mean=0.0, stddev=1.0, dtype=F32):
    dtype = np.dtype(dtype)
    z = _key_rng(key).standard_normal(shape, dtype=dtype)
    return (z * dtype.type(stddev) + dtype.type(mean)).astype(dtype)


def _uniform_ref(key, shape, minval=0.0, maxval=1.0, dtype=F32):
    dtype = np.dtype(dtype)
    u = _key_rng(key).random(shape, dtype=dtype)
    return (u * dtype.type(maxval - minval) + dtype.type(minval)).astype(dtype)


def _random_samples(low_kw, high_kw):
    def gen(dtype, rng):
        for key, shape, params in [([0, 0], (3, 4), {}), ([7, 3], (), {}), ([1, 2], (0, 5), {}),
                                   ([-5, 9], (5,), {low_kw: -2.0, high_kw: 3.0}),
                                   ([2**40, 1], 6, {low_kw: 1.5})]:
            yield Sample((np.array(key, dtype=np.int64),), dict(shape=shape, dtype=dtype, **params))
    return gen


def _random_errors(public):
    return lambda: [
        ErrorInput(Sample((np.array([0.0, 1.0]),), dict(shape=(2,))), en.DTypeError),
        ErrorInput(Sample((np.array([0, 1, 2]),), dict(shape=(2,))), en.DTypeError),
        ErrorInput(Sample((np.array([0, 1]),), dict(shape=(2, -1))), en.ShapeError, f"{public}:")]


add(OpInfo("random_normal", en.random.normal_from_key, _normal_ref,
           _random_samples("mean", "stddev"), op_dtypes("random_normal"), supports_grad=False,
           random=True, error_inputs=_random_errors("normal")))
def _uniform_like_ref(key, like, minval=0.0, maxval=1.0, dtype=F32):
    return _uniform_ref(key, np.shape(like), minval, maxval, dtype)


def _uniform_like(key, like=None, shape=None, **params):
    """The op; the shared random-op checks pass ``shape=`` instead of an input of that shape."""
    like = np.zeros(shape) if like is None else like
    return en.random.uniform_like_from_key(key, like, **params)


def _uniform_like_samples(dtype, rng):
    # The second input is read for its shape only.
    for key, shape, params in [([0, 0], (3, 4), {}), ([7, 3], (), {}), ([1, 2], (0, 5), {}),
                               ([-5, 9], (5,), {"minval": -2.0, "maxval": 3.0})]:
        yield Sample((np.array(key, dtype=np.int64), rng.standard_normal(shape)),
                     dict(dtype=dtype, **params))


def _uniform_like_errors():
    return [ErrorInput(Sample((np.array([0.0, 1.0]), np.zeros(2)), {}), en.DTypeError),
            ErrorInput(Sample((np.array([0, 1]), np.zeros(2)), dict(dtype="int32")),
                       en.DTypeError, "random_uniform_like:")]


add(OpInfo("random_uniform_like", _uniform_like, _uniform_like_ref,
           _uniform_like_samples, op_dtypes("random_uniform_like"), supports_grad=False,
           random=True, error_inputs=_uniform_like_errors))
add(OpInfo("random_uniform", en.random.uniform_from_key, _uniform_ref,
           _random_samples("minval", "maxval"), op_dtypes("random_uniform"), supports_grad=False,
           random=True, error_inputs=_random_errors("uniform")))
