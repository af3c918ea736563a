"""Modules and layers: ``en.nn``.

:class:`Module` finds its parameters in its attributes; layers are built from
the engine's ops, so they run eagerly, under tapes and inside ``en.function``.
Images are NHWC; dense weights are ``(in, out)``. ``en.nn.functional`` has
the stateless forms (and ``softmax``, ``cross_entropy`` and friends);
``en.nn.init`` the seeded initializers; ``save`` / ``load_into`` a safe file
format for a module's variables.

Example:
    >>> import engine as en
    >>> model = en.nn.Sequential(en.nn.Linear(4, 16, generator=0), en.nn.ReLU(),
    ...                          en.nn.Linear(16, 3, generator=1))
    >>> model
    Sequential(  # 131 parameters
      (0): Linear(in_features=4, out_features=16, bias=True)  # 80 parameters
      (1): ReLU()
      (2): Linear(in_features=16, out_features=3, bias=True)  # 51 parameters
    )
"""
from . import functional, init  # noqa: F401
from .module import Module  # noqa: F401
from .layers import (AvgPool2D, Conv2D, ConvTranspose2D, Dropout, Flatten, Linear,  # noqa: F401
                     MaxPool2D, Upsample)
from .normalization import BatchNorm, LayerNorm  # noqa: F401
from .embedding import Embedding  # noqa: F401
from .recurrent import GRUCell, LSTMCell, RNN  # noqa: F401
from .containers import ModuleList, Sequential  # noqa: F401
from .activations import (ELU, GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU,  # noqa: F401
                          Softmax, Softplus, Tanh)
from .serialization import load_into, save  # noqa: F401
from .torch_import import load_torch_state_dict  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
from .rnn_layers import GRU, LSTM, SimpleRNN  # noqa: F401
from .recurrent import RNNCell  # noqa: F401

# PyTorch-named layers (channels-first), losses and containers.
from .conv_layers import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                          ConvTranspose3d)
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: F401
                      AdaptiveMaxPool2d, AvgPool2d, GlobalAveragePooling1D,
                      GlobalAveragePooling2D, GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPool2d)
from .group_norms import GroupNorm, InstanceNorm1d, InstanceNorm2d, RMSNorm  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .holders import Identity, ModuleDict, ParameterDict, ParameterList  # noqa: F401
from .losses import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss,  # noqa: F401
                     KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss)

__all__ = ["Module", "Linear", "Conv2D", "ConvTranspose2D", "Upsample", "MaxPool2D",
           "AvgPool2D", "Flatten", "Dropout", "LayerNorm", "BatchNorm", "Embedding", "LSTMCell",
           "GRUCell", "RNN", "Sequential", "ModuleList", "ReLU", "LeakyReLU", "Tanh", "Sigmoid",
           "GELU", "SiLU", "ELU", "Softplus", "Softmax", "LogSoftmax", "functional", "init",
           "save", "load_into", "load_torch_state_dict"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder",
            "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
            "LSTM", "GRU", "SimpleRNN", "RNNCell"]
__all__ += ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
            "ConvTranspose3d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
            "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "GlobalAveragePooling1D",
            "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GroupNorm",
            "InstanceNorm1d", "InstanceNorm2d", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
            "BatchNorm3d", "Identity", "ModuleDict",
            "ParameterDict", "ParameterList", "CrossEntropyLoss", "NLLLoss", "BCELoss",
            "BCEWithLogitsLoss", "MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "KLDivLoss"]
