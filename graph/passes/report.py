"""What the optimizer did: one record per pass run, printable and available as data."""
from html import escape


class PassRecord:
    """One pass run: nodes before and after, what it did, and how long it took."""

    __slots__ = ("name", "nodes_before", "nodes_after", "note", "seconds")

    def __init__(self, name, nodes_before, nodes_after, note, seconds):
        self.name = name
        self.nodes_before = nodes_before
        self.nodes_after = nodes_after
        self.note = note
        self.seconds = seconds

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}


class OptimizationReport:
    """The sequence of pass runs. ``str(report)`` is a table; ``report.as_data()`` a list of dicts.

    Example output::

        pass               nodes  ->  nodes   time    what it did
        simplify              41  ->     33   0.4 ms  applied 8 rewrites
    """

    def __init__(self):
        self.records = []

    def add(self, record):
        self.records.append(record)

    def as_data(self):
        return [r.as_dict() for r in self.records]

    def __iter__(self):
        return iter(self.records)

    def __len__(self):
        return len(self.records)

    def __str__(self):
        lines = [f"{'pass':<18} {'nodes':>6}  -> {'nodes':>6} {'time':>9}  what it did"]
        for r in self.records:
            lines.append(f"{r.name:<18} {r.nodes_before:>6}  -> {r.nodes_after:>6} "
                         f"{r.seconds * 1e3:>6.1f} ms  {r.note or '-'}")
        return "\n".join(lines)

    def _repr_html_(self):
        return "<pre>" + escape(str(self)) + "</pre>"
