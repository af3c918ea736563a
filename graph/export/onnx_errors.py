"""The ONNX exporter's error, in a module of its own so that the pattern modules
(``onnx_export``, ``onnx_nn``) raise it without importing each other."""
from engine.errors import EngineError


class OnnxExportError(EngineError):
    """The graph holds an op with no ONNX equivalent (or onnx is not installed)."""
