"""Helpers shared by the test suites (tests/ is on pytest's ``pythonpath``, so a test
imports them as ``from support.finite_diff import central_difference``).

- ``finite_diff``: central finite differences, the reference for gradients;
- ``op_checks``: comparing engine results with numpy's over the op database;
- ``programs``: random straight-line programs (hypothesis) and ``flat``;
- ``pass_helpers``: building, counting and comparing optimized graphs;
- ``fused_lowering``: checks shared by the compiled (numba, C) fused kernels;
- ``models``: small traced models for save/load and ONNX export;
- ``hostile_files``: malformed saved graphs for the loader's tests;
- ``memory_probe``: the peak memory a call allocates;
- ``paths``: where the repository is (``REPO``), whatever a test's folder;
- ``compilers``: skipping a compiled lowering's tests where its C compiler or numba is missing.
- ``window_split``: window kernels split into chunks of images run in order (``chunks_in_order``).

The op database is its own package, ``op_db``.
"""
