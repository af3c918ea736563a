"""Stage 7, export: the native format (``native``: ``en.save``), loading it back
(``load``, ``load_arrays``), atomic writes of a save (``atomic_save``) and ONNX
(``onnx_export``, ``onnx_nn``, ``onnx_errors``).
"""
