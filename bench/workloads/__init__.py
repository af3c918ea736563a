"""The benchmark workloads. Each is a module here with the same small interface,
registered in ``WORKLOADS`` so the runner (``python -m bench``) finds it:

``NAME``         short name used on the command line (``python -m bench NAME``)
``DESCRIPTION``  one line for ``--list``
``MODES``        the modes it can run, e.g. ``["eager", "graph", "numpy", "torch"]``
``add_arguments(parser)``  optional: workload-specific options (``--batch`` ...)
``configs(args)``          the configurations to run (a list of dicts); honours
                           ``args.quick`` (the whole ``--quick`` suite finishes in
                           under a minute) and the workload's own options
``run(config, modes, args, tick)``  runs one configuration in the given modes
                           side by side in this process and returns a list of
                           result dicts (see ``bench.common.result``); calls
                           ``tick()`` after each timed repetition (progress bar).
                           A mode whose framework is missing is returned with
                           ``skipped`` set to the reason, never raised.
``plot(results, out_dir)`` optional: writes PNG files, returns their paths

Modes are named the same across workloads where they mean the same thing:
``eager``, ``graph`` (everything traced with all passes), ``graph_nopass``,
``numpy`` (the same computation written by hand in numpy), ``torch``, ``jax``.
"""
import importlib

_MODULES = ["least_squares", "lbfgs", "autoencoder", "big_ops", "rnn", "gc_pauses", "transforms",
            "styles", "dask_lbfgs"]


def load():
    """``{NAME: module}`` for every workload module that exists."""
    found = {}
    for name in _MODULES:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"{__name__}.{name}":
                continue
            raise
        found[mod.NAME] = mod
    return found
