"""Session-wide test settings.

``graph.lint()`` runs after every optimization pass in every test, so a pass
that leaves a broken graph (a dangling edge, a wrong recorded shape or dtype,
a cycle) fails the test that triggered it, at the pass that did it.
"""
import engine.graph.passes

engine.graph.passes.LINT_AFTER_EACH_PASS[0] = True
