"""scaled_dot_product_attention and MultiheadAttention: against the numpy formulas of
tests/support/attention_reference.py (float32 and float64, eagerly and inside en.function),
gradients against finite differences, and against PyTorch with the same weights (values and
gradients)."""

import numpy as np
import pytest
from support.attention_reference import np_mha, np_sdpa
from support.finite_diff import grad_checker, numeric_grad
from support.memory_probe import peak_bytes

import engine as en

F = en.nn.functional
TOL = {np.dtype("float32"): dict(rtol=2e-5, atol=2e-5), np.dtype("float64"): dict(rtol=1e-10, atol=1e-12)}


def _t(a, dtype):
    return en.tensor(np.asarray(a, dtype))


# ---- scaled_dot_product_attention ---------------------------------------------------------
CASES = [
    ("plain", (2, 3, 5, 4), (2, 3, 7, 4), 6, {}),
    ("causal", (2, 3, 5, 4), (2, 3, 7, 4), 6, dict(is_causal=True)),
    ("causal square", (1, 6, 4), (1, 6, 4), 4, dict(is_causal=True)),
    ("scale", (3, 4, 8), (3, 2, 8), 5, dict(scale=0.25)),
    ("bool mask", (2, 2, 5, 4), (2, 2, 7, 4), 3, dict(attn_mask="bool")),
    ("float mask", (2, 2, 5, 4), (2, 2, 7, 4), 3, dict(attn_mask="float")),
    ("broadcast batch", (2, 3, 5, 4), (1, 3, 7, 4), 6, {}),
    ("2-D", (5, 4), (7, 4), 2, {}),
]


def _case(rng, shape_q, shape_k, ev, kwargs, dtype):
    q = rng.normal(size=shape_q)
    k = rng.normal(size=shape_k)
    v = rng.normal(size=shape_k[:-1] + (ev,))
    mask = None
    if kwargs.get("attn_mask") == "bool":
        mask = rng.random((shape_q[-2], shape_k[-2])) < 0.6
        mask[:, 0] = True
    elif kwargs.get("attn_mask") == "float":
        lead = (shape_q[0],) + (1,) * (len(shape_q) - 3)      # per batch entry, broadcast over heads
        mask = rng.normal(size=lead + (shape_q[-2], shape_k[-2])).astype(dtype)
    kwargs = {key: val for key, val in kwargs.items() if key != "attn_mask"}
    return q.astype(dtype), k.astype(dtype), v.astype(dtype), mask, kwargs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("name,sq,sk,ev,kwargs", CASES, ids=[c[0] for c in CASES])
def test_sdpa_matches_numpy(name, sq, sk, ev, kwargs, dtype, graph):
    q, k, v, mask, kw = _case(np.random.default_rng(0), sq, sk, ev, kwargs, dtype)
    expected = np_sdpa(q, k, v, mask, kw.get("is_causal", False), kw.get("scale"))
    m = None if mask is None else en.tensor(mask)

    def run(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    fn = en.function(run) if graph else run
    out = fn(en.tensor(q), en.tensor(k), en.tensor(v))
    assert out.dtype == np.dtype(dtype) and out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, **TOL[np.dtype(dtype)])


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("kwargs", [{}, dict(is_causal=True), dict(attn_mask="bool")],
                         ids=["plain", "causal", "mask"])
def test_sdpa_in_blocks_matches_numpy(monkeypatch, kwargs, graph):
    """Large problems run in blocks of query rows: the same result, block edges anywhere."""
    monkeypatch.setattr(en.config.cost, "attention_block_elements", 2 * 3 * 7 * 2)   # two rows a block
    q, k, v, mask, kw = _case(np.random.default_rng(1), (2, 3, 5, 4), (2, 3, 7, 4), 6,
                              kwargs, "float64")
    m = None if mask is None else en.tensor(mask)
    def run(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    fn = en.function(run) if graph else run
    out = fn(en.tensor(q), en.tensor(k), en.tensor(v))
    np.testing.assert_allclose(out.numpy(), np_sdpa(q, k, v, mask, kw.get("is_causal", False)),
                               rtol=1e-12, atol=1e-12)


def test_blocked_graph_never_holds_the_whole_score_matrix(monkeypatch):
    """With blocks, no value of the traced graph has the (B, H, L, S) shape of the scores,
    and causal blocks read only the keys up to their last row."""
    monkeypatch.setattr(en.config.cost, "attention_block_elements", 2 * 16 * 4)      # four rows a block
    q = en.tensor(np.random.default_rng(2).normal(size=(2, 16, 8)))
    f = en.function(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
                    optimize=False)
    shapes = [tuple(n.shape) for n in f.graph_for(q).nodes if getattr(n, "shape", None)]
    assert (2, 16, 16) not in shapes
    assert {(2, 4, 4), (2, 4, 8), (2, 4, 12), (2, 4, 16)} <= set(shapes)   # the causal blocks
    np.testing.assert_allclose(f(q).numpy(), np_sdpa(q.numpy(), q.numpy(), q.numpy(),
                                                     causal=True), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
def test_blocks_bound_the_eager_peak_memory(monkeypatch, causal):
    """Eagerly, blocks of 16 query rows keep the peak near a few block-sized score arrays;
    one block holds several full (B, L, S) arrays at once."""
    monkeypatch.setattr(en.config, "eager_cache_bytes", 0)     # count the working set only
    q = en.tensor(np.random.default_rng(15).normal(size=(2, 512, 8)))
    full = 2 * 512 * 512 * 8                                   # one float64 score matrix

    def run():
        F.scaled_dot_product_attention(q, q, q, is_causal=causal)
    one_block = peak_bytes(run)
    monkeypatch.setattr(en.config.cost, "attention_block_elements", 2 * 16 * 512)
    blocked = peak_bytes(run)
    assert one_block > 2 * full
    assert blocked < full / 2


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
def test_blocks_run_in_order_so_the_graph_plans_one_blocks_memory(monkeypatch, causal):
    """Traced, the blocks run one after another: the memory plan holds about one block's
    scores, where one block plans a whole (B, L, S) matrix."""
    q = en.tensor(np.random.default_rng(16).normal(size=(2, 512, 8)))
    full = 2 * 512 * 512 * 8                                   # one float64 score matrix

    def planned():
        f = en.function(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=causal))
        return f.memory_report(q)["buffer_bytes"]
    one_block = planned()
    monkeypatch.setattr(en.config.cost, "attention_block_elements", 2 * 32 * 512)
    blocked = planned()
    assert one_block >= full
    assert blocked < full / 4


def test_fully_masked_row_gives_zeros():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(en.tensor(q), en.tensor(k), en.tensor(v),
                                         attn_mask=en.tensor(mask)).numpy()
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(out, np_sdpa(q, k, v, mask), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, dict(is_causal=True), dict(attn_mask="float")],
                         ids=["plain", "causal", "float mask"])
def test_sdpa_gradients_match_finite_differences(kwargs):
    q, k, v, mask, kw = _case(np.random.default_rng(4), (2, 3, 4), (2, 5, 4), 3, kwargs,
                              "float64")
    m = None if mask is None else en.tensor(mask)
    grad_checker(np.random.default_rng(5))(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw), q, k, v)


def test_sdpa_gradient_of_a_float_mask():
    rng = np.random.default_rng(6)
    q, k, v, mask = (rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2), (3, 5)])
    c = rng.normal(size=(3, 2))

    def loss(mask):
        return en.sum(F.scaled_dot_product_attention(en.tensor(q), en.tensor(k), en.tensor(v),
                                                     attn_mask=mask) * c)
    g = en.grad(loss)(en.tensor(mask)).numpy()
    np.testing.assert_allclose(g, numeric_grad(loss, [mask]), rtol=1e-6, atol=1e-8)


def test_sdpa_dropout_drops_weights_and_rescales():
    """With value = identity the output is the (dropped) weights: each is 0 or the weight
    over (1 - p); the same seed drops the same entries, eagerly and traced."""
    rng = np.random.default_rng(7)
    q, k = rng.normal(size=(4, 64, 8)), rng.normal(size=(4, 64, 8))
    eye = np.broadcast_to(np.eye(64), (4, 64, 64)).copy()
    p = 0.3
    ref = np_sdpa(q, k, eye)

    def run(q, k, v, gen):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, generator=gen)
    out = run(en.tensor(q), en.tensor(k), en.tensor(eye), en.random.Generator(11)).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], ref[kept] / (1 - p), rtol=1e-12)
    assert abs(1 - kept.mean() - p) < 0.02
    traced = en.function(lambda q, k, v: run(q, k, v, en.random.Generator(11)))
    np.testing.assert_array_equal(traced(en.tensor(q), en.tensor(k), en.tensor(eye)).numpy(), out)


@pytest.mark.parametrize("args,kwargs,error,match", [
    (((2, 5, 4), (2, 7, 3), (2, 7, 6)), {}, en.ShapeError, r"same last dimension.*query "
     r"float64\[2,5,4\], key float64\[2,7,3\]"),
    (((2, 5, 4), (2, 7, 4), (2, 6, 6)), {}, en.ShapeError, "same length"),
    (((2, 5, 4), (3, 7, 4), (3, 7, 6)), {}, en.ShapeError, "must broadcast"),
    (((4,), (7, 4), (7, 6)), {}, en.ShapeError, "at least 2 dimensions"),
    (((5, 4), (7, 4), (7, 6)), dict(attn_mask=np.ones((5, 6), bool)), en.ShapeError,
     r"attn_mask must broadcast.*\(5, 7\)"),
    (((5, 4), (7, 4), (7, 6)), dict(attn_mask=np.ones((5, 7), np.int64)), en.DTypeError,
     "bool"),
    (((5, 4), (7, 4), (7, 6)), dict(attn_mask=np.ones((5, 7), bool), is_causal=True),
     en.InvalidArgumentError, "not both"),
    (((5, 4), (7, 4), (7, 6)), dict(dropout_p=1.0), en.InvalidArgumentError, "dropout_p"),
])
def test_sdpa_errors_name_the_op_shapes_and_line(args, kwargs, error, match):
    q, k, v = (en.ones(s) for s in args)
    kwargs = {key: en.tensor(val) if isinstance(val, np.ndarray) else val
              for key, val in kwargs.items()}
    with pytest.raises(error, match=match) as info:
        F.scaled_dot_product_attention(q, k, v, **kwargs)
    assert "scaled_dot_product_attention" in str(info.value)
    if error is not en.InvalidArgumentError:
        assert "test_attention.py" in str(info.value)          # the user's line


def test_sdpa_refuses_mixed_dtypes():
    with pytest.raises(en.DTypeError, match="query float32.*key float64"):
        F.scaled_dot_product_attention(en.ones((3, 4), dtype="float32"), en.ones((3, 4)),
                                       en.ones((3, 4)))


@pytest.mark.parametrize("kwargs", [{}, dict(is_causal=True), dict(attn_mask="bool"),
                                    dict(attn_mask="float"), dict(scale=0.5)],
                         ids=["plain", "causal", "bool mask", "float mask", "scale"])
def test_sdpa_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    q, k, v, mask, kw = _case(np.random.default_rng(8), (2, 3, 5, 4), (2, 3, 7, 4), 6,
                              kwargs, "float64")
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tm = None if mask is None else torch.tensor(mask)
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    c = np.random.default_rng(9).normal(size=expected.shape)
    (expected * torch.tensor(c)).sum().backward()
    m = None if mask is None else en.tensor(mask)

    def loss(q, k, v):
        return en.sum(F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw) * c)
    out = F.scaled_dot_product_attention(en.tensor(q), en.tensor(k), en.tensor(v), attn_mask=m,
                                         **kw)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    grads = en.grad(loss, argnums=(0, 1, 2))(en.tensor(q), en.tensor(k), en.tensor(v))
    for g, t in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


# ---- MultiheadAttention ---------------------------------------------------------------------
def _mha_params(mha):
    return {name: v.numpy().astype(np.float64) for name, v in mha.named_variables()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_mha_matches_numpy(dtype, graph):
    rng = np.random.default_rng(10)
    mha = en.nn.MultiheadAttention(8, 2, dtype=dtype, generator=0)
    q, k = rng.normal(size=(5, 3, 8)), rng.normal(size=(6, 3, 8))
    pad = np.zeros((3, 6), bool)
    pad[1, 4:] = True
    attn_mask = rng.random((5, 6)) < 0.3
    attn_mask[:, 0] = False

    def run(q, k):
        return mha(q, k, k, key_padding_mask=en.tensor(pad), attn_mask=en.tensor(attn_mask),
                   average_attn_weights=False)
    fn = en.function(run) if graph else run
    out, weights = fn(_t(q, dtype), _t(k, dtype))
    ref, ref_w = np_mha(q, k, k, _mha_params(mha), 2, pad, attn_mask)
    assert out.dtype == np.dtype(dtype) and weights.shape == (3, 2, 5, 6)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), ref, **tol)
    np.testing.assert_allclose(weights.numpy(), ref_w, **tol)


def test_mha_batch_first_unbatched_and_averaged_weights_agree():
    rng = np.random.default_rng(11)
    mha = en.nn.MultiheadAttention(8, 4, dtype="float64", generator=1)
    x = rng.normal(size=(5, 2, 8))
    out, w = mha(en.tensor(x), en.tensor(x), en.tensor(x))
    first = en.nn.MultiheadAttention(8, 4, batch_first=True, dtype="float64", generator=1)
    out_bf, w_bf = first(*(en.tensor(x.transpose(1, 0, 2)),) * 3)
    np.testing.assert_allclose(out_bf.numpy(), out.numpy().transpose(1, 0, 2), rtol=1e-12)
    np.testing.assert_allclose(w_bf.numpy(), w.numpy(), rtol=1e-12)
    one, w_one = mha(*(en.tensor(x[:, 1]),) * 3)
    np.testing.assert_allclose(one.numpy(), out.numpy()[:, 1], rtol=1e-12)
    assert w_one.shape == (5, 5)
    _, per_head = mha(*(en.tensor(x),) * 3, average_attn_weights=False)
    np.testing.assert_allclose(w.numpy(), per_head.numpy().mean(1), rtol=1e-12)
    blocked, none = mha(*(en.tensor(x),) * 3, need_weights=False)
    assert none is None
    np.testing.assert_allclose(blocked.numpy(), out.numpy(), rtol=1e-12)


def test_mha_gradients_match_finite_differences():
    rng = np.random.default_rng(12)
    mha = en.nn.MultiheadAttention(4, 2, dtype="float64", generator=2)
    x = rng.normal(size=(3, 2, 4))
    c = rng.normal(size=(3, 2, 4))
    w0 = mha.in_proj_weight.numpy().copy()

    def loss(w, x):
        mha.in_proj_weight.assign(w)
        return en.sum(mha(x, x, x, need_weights=False, is_causal=True)[0] * c)
    with en.GradientTape() as tape:
        value = en.sum(mha(en.tensor(x), en.tensor(x), en.tensor(x), need_weights=False,
                           is_causal=True)[0] * c)
    g = tape.gradient(value, mha.in_proj_weight).numpy()
    np.testing.assert_allclose(g, numeric_grad(loss, [w0, x], 0), rtol=1e-6, atol=1e-8)
    mha.in_proj_weight.assign(w0)
    gx = en.grad(lambda x: loss(en.tensor(w0), x), argnums=0)(en.tensor(x)).numpy()
    np.testing.assert_allclose(gx, numeric_grad(loss, [w0, x], 1), rtol=1e-6, atol=1e-8)


def test_mha_errors():
    mha = en.nn.MultiheadAttention(8, 2)
    ones = lambda *s, dtype="float32": en.ones(s, dtype=dtype)   # noqa: E731
    with pytest.raises(en.ShapeError, match=r"MultiheadAttention: key must have 8 features.*"
                                            r"key float32\[5,3,6\]"):
        mha(ones(5, 3, 8), ones(5, 3, 6), ones(5, 3, 8))
    with pytest.raises(en.ShapeError, match=r"key_padding_mask must be \(N, S\) = \(3, 5\)"):
        mha(*(ones(5, 3, 8),) * 3, key_padding_mask=ones(5, 3, dtype="bool"))
    with pytest.raises(en.ShapeError, match=r"attn_mask must be \(L, S\)"):
        mha(*(ones(5, 3, 8),) * 3, attn_mask=ones(4, 5, dtype="bool"))
    with pytest.raises(en.InvalidArgumentError, match="divisible"):
        en.nn.MultiheadAttention(8, 3)
    traced = en.function(lambda x: mha(x, x, x)[0],
                         input_signature=[en.TensorSpec((None, None, 8), "float32")])
    with pytest.raises(en.ShapeError, match="needs a known batch size or known lengths"):
        traced(ones(5, 3, 8))


def _torch_mha(torch, mha, **kwargs):
    """A torch.nn.MultiheadAttention holding ``mha``'s weights (transposed to (out, in))."""
    t = torch.nn.MultiheadAttention(mha.embed_dim, mha.num_heads, batch_first=mha.batch_first,
                                    bias=mha.in_proj_bias is not None, kdim=mha.kdim,
                                    vdim=mha.vdim, dtype=torch.float64, **kwargs)
    state = {name: torch.tensor(v.numpy().astype(np.float64).T if v.ndim == 2
                                else v.numpy().astype(np.float64))
             for name, v in mha.named_variables()}
    t.load_state_dict(state)
    return t


@pytest.mark.parametrize("setting", ["masks", "batch_first", "kdim", "no bias", "float mask",
                                     "per head mask", "unbatched"])
def test_mha_matches_torch(setting):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    kw = dict(batch_first=setting == "batch_first", bias=setting != "no bias")
    if setting == "kdim":
        kw.update(kdim=5, vdim=3)
    mha = en.nn.MultiheadAttention(8, 2, dtype="float64", generator=3, **kw)
    t = _torch_mha(torch, mha)
    n, length, s = 3, 4, 6
    lead = (lambda m: (n, m)) if kw["batch_first"] else (lambda m: (m, n))
    if setting == "unbatched":
        lead = lambda m: (m,)   # noqa: E731
    q = rng.normal(size=lead(length) + (8,))
    k = rng.normal(size=lead(s) + (mha.kdim,))
    v = rng.normal(size=lead(s) + (mha.vdim,))
    call = {}
    if setting in ("masks", "batch_first", "kdim", "no bias"):
        pad = np.zeros((n, s), bool)
        pad[0, 3:] = True
        call = dict(key_padding_mask=pad, attn_mask=rng.random((length, s)) < 0.3)
        call["attn_mask"][:, 0] = False
    elif setting == "float mask":
        call = dict(attn_mask=rng.normal(size=(length, s)))
    elif setting == "per head mask":
        call = dict(attn_mask=rng.normal(size=(n * 2, length, s)), average_attn_weights=False)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    t_call = {key: torch.tensor(val) if isinstance(val, np.ndarray) else val
              for key, val in call.items()}
    t_out, t_w = t(tq, tk, tv, **t_call)
    c = rng.normal(size=t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    e_call = {key: en.tensor(val) if isinstance(val, np.ndarray) else val
              for key, val in call.items()}
    with en.GradientTape() as tape:
        eq, ek, ev = (en.tensor(a) for a in (q, k, v))
        for a in (eq, ek, ev):
            tape.watch(a)
        out, w = mha(eq, ek, ev, **e_call)
        loss = en.sum(out * c)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), rtol=1e-10, atol=1e-12)
    variables = [var for _, var in mha.named_variables()]
    grads = tape.gradient(loss, [eq, ek, ev] + variables)
    for g, ta in zip(grads[:3], (tq, tk, tv)):
        np.testing.assert_allclose(g.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-11)
    t_params = dict(t.named_parameters())
    for (name, _), g in zip(mha.named_variables(), grads[3:]):
        tg = t_params[name].grad.numpy()
        np.testing.assert_allclose(g.numpy(), tg.T if tg.ndim == 2 else tg, rtol=1e-9,
                                   atol=1e-11, err_msg=name)


def test_mha_loads_a_torch_state_dict_by_name():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64)
    mha = en.nn.MultiheadAttention(8, 2, dtype="float64")
    en.nn.load_torch_state_dict(mha, t.state_dict())
    x = np.random.default_rng(14).normal(size=(4, 2, 8))
    expected = t(*(torch.tensor(x),) * 3)[0].detach().numpy()
    np.testing.assert_allclose(mha(*(en.tensor(x),) * 3)[0].numpy(), expected, rtol=1e-10,
                               atol=1e-12)
