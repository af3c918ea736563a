"""The examples in the docstrings of the transformation modules run and are right."""
import doctest
import importlib

import pytest

MODULES = ["engine.transforms.forward", "engine.transforms.batching",
           "engine.transforms.jacobians", "engine.transforms.checkpoint", "engine.ops._rules",
           "engine.autodiff.tape", "engine.ops.misc"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures, tried = doctest.testmod(importlib.import_module(name),
                                      optionflags=doctest.ELLIPSIS)
    assert tried and not failures
