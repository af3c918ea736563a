"""Debugging switches: ``en.debug.check_numerics()``."""
from eager.numerics import check_numerics  # noqa: F401
