"""The PyTorch-named layers export to ONNX through the rules of the ops they are made of
(conv2d, pad, slices, reshapes, reductions) and run in onnxruntime as they run here.
Their values are checked against numpy and torch in test_conv_layers.py and
test_norm_pool_layers.py; this is the extra check that needs the onnx extra."""
import numpy as np
import pytest

import engine as en

pytest.importorskip("onnx", reason="the optional onnx extra is not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

nn = en.nn
LAYERS = [(lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1, generator=0), (2, 2, 9)),
          (lambda: nn.Conv3d(2, 3, (2, 3, 2), padding=1, groups=1, generator=0), (1, 2, 3, 4, 4)),
          (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1, generator=0),
           (2, 2, 5)),
          (lambda: nn.ConvTranspose3d(2, 4, 2, stride=2, groups=2, generator=0),
           (1, 2, 2, 3, 2)),
          (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect", generator=0),
           (1, 3, 5, 5)),
          (lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
          (lambda: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
          (lambda: nn.RMSNorm(6), (3, 6)),
          (lambda: nn.AdaptiveAvgPool2d((3, 2)), (1, 2, 7, 5)),
          (lambda: nn.AdaptiveMaxPool1d(3), (1, 2, 7))]


@pytest.mark.parametrize("make, shape", LAYERS, ids=[f"layer{i}" for i in range(len(LAYERS))])
def test_exported_layer_runs_in_onnxruntime(make, shape, tmp_path):
    layer = make()
    x = en.tensor(np.random.default_rng(0).normal(size=shape).astype(np.float32))
    model = en.export_onnx(lambda x: layer(x), str(tmp_path / "layer.onnx"), x)
    meta = {p.key: p.value for p in model.metadata_props}
    assert float(meta["engine.onnxruntime_max_abs_difference"]) < 1e-4
