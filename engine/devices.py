"""The devices tensors live on. Each array back end carries its device
(``Backend.device``); the back ends registered today all compute on the host CPU.

A tensor's device is its back end's: data moves between back ends with
``t.to(name)``, never by device.

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


def check_device(device, fn, own=CPU):
    """Refuse a device other than ``own`` (the back end's), naming the function."""
    if device is not None and device != own and device != own.name:
        raise InvalidArgumentError(f"{fn}: unknown device {device!r}; the engine computes on {own!r}")
