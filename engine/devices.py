"""The devices tensors live on. The engine computes on one, the host CPU.

Every tensor's values are in host memory (a tensor of another back end, such as
array_api_strict, is moved with ``t.to(name)``, never by device).

Example:
    >>> import engine as en
    >>> en.tensor([1.0]).device
    Device('cpu')
"""
from .errors import InvalidArgumentError


class Device:
    """A device a tensor can live on; the engine has one, :data:`CPU`."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self):
        return hash(("engine.Device", self.name))

    def __repr__(self):
        return f"Device({self.name!r})"


CPU = Device("cpu")


def check_device(device, fn):
    """Refuse a device the engine does not have, naming the function."""
    if device is not None and device != CPU and device != "cpu":
        raise InvalidArgumentError(f"{fn}: unknown device {device!r}; the engine computes on {CPU!r}")
