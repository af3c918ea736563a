"""Session-wide test settings.

``graph.lint()`` runs after every optimization pass in every test, so a pass
that leaves a broken graph (a dangling edge, a wrong recorded shape or dtype,
a cycle) fails the test that triggered it, at the pass that did it.

Compiled regions are cached in a fresh folder for the session, so what the
default ("auto") lowering chooses never depends on what an earlier run left in
the user's cache.

Fixtures shared by several folders' tests come in as plugins from ``tests/support/``.
"""
import os
import tempfile

import engine.graph.lowering.pipeline

pytest_plugins = ["support.thread_settings"]     # the ``threads`` fixture

engine.graph.lowering.pipeline.LINT_AFTER_EACH_PASS[0] = True
os.environ["ENGINE_CACHE_DIR"] = tempfile.mkdtemp(prefix="engine-test-cache-")
