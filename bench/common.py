"""Shared helpers for the benchmark workloads and the runner (``python -m bench``).

What a workload needs:

- :func:`result` builds the one record every workload returns per mode:
  ``{"workload", "config", "mode", "median_ms", "min_ms", "n", "times", ...}``.
- :func:`time_modes` times several modes side by side in a few rounds of
  blocks (each mode settles, then runs its share), so drift in the machine's
  speed hits them alike and no mode is timed in another library's wake.
- :func:`torch_or_none` / :func:`jax_or_none` import the optional frameworks,
  returning ``None`` when they are missing; :func:`skip_reason` says why.

What the runner uses: :func:`machine_facts`, :class:`Progress` (a text bar on
stderr), :func:`format_table`, :func:`write_json`.

Example:
    >>> import time
    >>> times = time_modes({"a": lambda: None, "b": lambda: time.sleep(0)}, repeats=3)
    >>> r = result("demo", {"size": 1}, "a", times["a"])
    >>> sorted(r)[:4], r["n"]
    (['config', 'median_ms', 'min_ms', 'mode'], 3)
"""
import importlib
import json
import os
import platform
import statistics
import sys
import time

import numpy as np


# ----------------------------------------------------------------------------
# result records

def result(workload, config, mode, times_s, extra=None, skipped=None):
    """One result record: a mode's timings (seconds) on one configuration.

    ``times_s`` are the timed repetitions (warm-up excluded), in seconds;
    ``extra`` is merged in (e.g. ``{"loss": [...], "final_gap": 1e-6}``);
    ``skipped`` is a reason string when the mode did not run (missing
    framework, ...): the timings are then ``None``.

        >>> result("lbfgs", {"batch": 100}, "torch", [], skipped="torch not installed")["skipped"]
        'torch not installed'
    """
    times = [float(t) for t in (times_s or [])]
    rec = {
        "workload": workload,
        "config": dict(config),
        "mode": mode,
        "median_ms": statistics.median(times) * 1e3 if times and not skipped else None,
        "min_ms": min(times) * 1e3 if times and not skipped else None,
        "max_ms": max(times) * 1e3 if times and not skipped else None,
        "n": len(times) if not skipped else 0,
        "times": times if not skipped else [],
        "skipped": skipped,
    }
    if extra:
        rec.update(extra)
    return rec


def results(workload, config, modes, times, extras, skipped):
    """One result per mode, in ``modes`` order: timed, or skipped with its reason."""
    return [result(workload, config, mode, [], skipped=skipped[mode]) if mode in skipped
            else result(workload, config, mode, times[mode], extra=extras.get(mode))
            for mode in modes]


# The modes that are not the engine: what it is compared with. A baseline's difference from
# the float64 reference (float32 rounding in another summation order) is a note, not a failure.
BASELINE_PREFIXES = ("numpy", "torch", "jax")


def is_baseline(mode):
    """True for a comparison mode (numpy, PyTorch, JAX), False for the engine's own."""
    return mode.startswith(BASELINE_PREFIXES)


def config_label(config):
    """A short text form of a configuration dict: ``batch=100 history=5``."""
    return " ".join(f"{k}={v}" for k, v in config.items())


# ----------------------------------------------------------------------------
# timing

def _noop():
    pass


ROUNDS = 4


def _wait_for_engine_compiles():
    if "engine" in sys.modules:   # nothing to wait for in a process without the engine
        from engine.graph.lowering.hot_swap import wait_for_compiles
        wait_for_compiles()


def time_modes(fns, repeats, tick=None, warmup=1, rounds=ROUNDS):
    """Time each ``mode -> callable`` ``repeats`` times, in interleaved blocks.

    Every callable is first run ``warmup`` times (untimed: tracing, caches).
    Then, in up to ``rounds`` rounds, each mode in turn runs one untimed call
    and its share of the timed calls back to back: each mode is timed in its
    own steady state (PyTorch's and XLA's worker threads spin for a while after
    their work ends and would take the cores from a mode timed right after
    them), while the rounds still spread slow drifts of the machine over all
    modes. Returns ``{mode: [seconds, ...]}``; calls ``tick()`` after each
    timed call. A callable may return a number of seconds itself (e.g. when
    it must exclude set-up from the measurement); otherwise its wall time is used.
    Before each turn, the engine's background compiles (``hot_swap.py``) finish.
    """
    tick = tick or _noop
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {mode: [] for mode in fns}
    rounds = max(1, min(rounds, repeats))
    for r in range(rounds):
        share = repeats // rounds + (r < repeats % rounds)
        for mode, fn in fns.items():
            # The engine compiles hot kernels in the background: no compiler may run
            # beside another mode's turn (the mode that started it pays in its own).
            _wait_for_engine_compiles()
            fn()                                  # untimed: settles the machine for this mode
            for _ in range(share):
                start = time.perf_counter()
                ret = fn()
                elapsed = time.perf_counter() - start
                if isinstance(ret, float) and not isinstance(ret, bool):
                    elapsed = ret
                times[mode].append(elapsed)
                tick()
    return times


def time_once(fn):
    """``(seconds, return value)`` of one call of ``fn``."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


# ----------------------------------------------------------------------------
# optional frameworks

_SKIP = {}


def _optional(name):
    if name in _SKIP:
        return None
    try:
        return importlib.import_module(name)
    except Exception as err:  # ImportError, or a broken install
        _SKIP[name] = f"{name} not installed ({type(err).__name__}: {err})".strip()
        return None


def torch_or_none():
    """The ``torch`` module, or ``None`` when it is not importable.

    With ``BENCH_THREADS`` set (``python -m bench --threads N``) PyTorch is
    limited to that many threads.
    """
    torch = _optional("torch")
    threads = os.environ.get("BENCH_THREADS")
    if torch is not None and threads and threads.isdigit() and \
            torch.get_num_threads() != int(threads):
        torch.set_num_threads(int(threads))
    return torch


def jax_or_none():
    """The ``jax`` module (with 64-bit off, CPU), or ``None`` when missing."""
    return _optional("jax")


def skip_reason(name):
    """Why framework ``name`` was skipped (after ``torch_or_none``/``jax_or_none``)."""
    return _SKIP.get(name, f"{name} not installed")


# ----------------------------------------------------------------------------
# machine facts

def peak_rss_mib():
    """This process's peak resident memory so far, in MiB (2**20 bytes; None where unknown).

    Example:
        >>> peak_rss_mib() > 1     # a Python process holds more than a mebibyte
        True
    """
    try:
        import resource
    except ImportError:        # not on POSIX
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20   # KiB; macOS counts bytes


def peak_memory_line(results):
    """The run's peak resident memory, in GiB and GB, and the first configuration that
    reached it (each record carries the peak after its configuration ran).

    Example:
        >>> peak_memory_line([{"peak_rss_mib": 2120.0, "workload": "lbfgs",
        ...                    "config": {"batch": 10000}}])
        'peak resident memory: 2.07 GiB (2.22 GB), reached during lbfgs batch=10000'
    """
    seen = [r for r in results if r.get("peak_rss_mib") is not None]
    if not seen:
        return "peak resident memory: unknown on this platform"
    top = max(r["peak_rss_mib"] for r in seen)
    first = next(r for r in seen if r["peak_rss_mib"] == top)
    gib, gb = top / 1024, top * 2**20 / 1e9
    return (f"peak resident memory: {gib:.2f} GiB ({gb:.2f} GB), reached during "
            f"{first['workload']} {config_label(first['config'])}")


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas():
    """BLAS facts: numpy's build config, and threadpoolctl's view when installed."""
    info = {}
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["numpy_blas"] = f"{deps.get('name', '?')} {deps.get('version', '')}".strip()
    except Exception:  # older numpy: no dict mode
        info["numpy_blas"] = "unknown"
    try:
        import threadpoolctl
        pools = threadpoolctl.threadpool_info()
        info["threadpools"] = [
            {k: p.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer")}
            for p in pools]
    except Exception:
        pass
    return info


def _version(name):
    mod = sys.modules.get(name)
    if mod is None:
        try:
            from importlib.metadata import version
            return version(name)
        except Exception:
            return None
    return getattr(mod, "__version__", None)


def machine_facts():
    """Facts about the machine and libraries, recorded with every result file."""
    facts = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": _version("torch"),
        "jax": _version("jax"),
        "matplotlib": _version("matplotlib"),
        "threads": os.environ.get("BENCH_THREADS") or "default (libraries choose)",
    }
    facts.update(_blas())
    torch = sys.modules.get("torch")
    if torch is not None:
        facts["torch_threads"] = torch.get_num_threads()
    return facts


def facts_line(facts):
    """One line of the machine facts for the head of the report."""
    parts = [f"CPU: {facts['cpu']}, {facts['cores']} cores, threads: {facts.get('threads')}",
             f"Python {facts['python']}",
             f"numpy {facts['numpy']} ({facts.get('numpy_blas', '?')})"]
    for name in ("torch", "jax"):
        parts.append(f"{name} {facts[name]}" if facts.get(name) else f"{name}: not installed")
    return "; ".join(parts)


# ----------------------------------------------------------------------------
# progress bar

class Progress:
    """A plain text progress bar on stderr: ``[#####.....] 12/40 lbfgs batch=100``.

    ``tick()`` advances one step; ``total`` may grow with ``add(n)``. Writes
    nothing when ``enabled`` is false. On a terminal the bar is redrawn in
    place (at most ten times a second); otherwise (a log file, a pipe) one
    line is written per new label, so logs stay short.
    """

    def __init__(self, total=0, width=30, stream=None, enabled=True):
        self.total = total
        self.done = 0
        self.width = width
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.label = ""
        self.detail = ""
        self._last = 0.0
        self._start = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_label = None

    def add(self, n):
        self.total += n
        self._draw(force=True)

    def set_label(self, label):
        """What is running now; a new label starts a new line when not on a terminal."""
        self.label = label
        self.detail = ""
        self._draw(force=True)

    def set_detail(self, detail):
        """A detail after the label (e.g. repetitions done), shown on terminals only."""
        self.detail = detail
        self._draw()

    def tick(self, n=1):
        self.done += n
        self._draw()

    def _draw(self, force=False):
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and (not self._tty or now - self._last < 0.1):
            return
        self._last = now
        total = max(self.total, self.done, 1)
        filled = int(self.width * self.done / total)
        bar = "#" * filled + "." * (self.width - filled)
        text = f"[{bar}] {self.done}/{total} {now - self._start:5.0f}s {self.label}"
        if self._tty:
            self.stream.write("\r" + f"{text} {self.detail}"[:119].ljust(119))
        elif self.label == self._last_label or not self.label:
            return
        else:
            self.stream.write(text + "\n")
        self._last_label = self.label
        self.stream.flush()

    def newline(self):
        """End the bar's line (before printing a message on a terminal)."""
        if self.enabled and self._tty:
            self.stream.write("\n")
            self.stream.flush()

    def close(self):
        if self.enabled and self._tty:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()


# ----------------------------------------------------------------------------
# tables and files

def _fmt_ms(ms):
    if ms is None:
        return "-"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def _fmt_ratio(a, b):
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}x"


def _fmt_spread(r):
    """``min-max`` ms over the timed calls (``n`` of them), so noise is visible."""
    lo, hi = r.get("min_ms"), r.get("max_ms")
    if lo is None:
        return "-"
    if hi is None:
        hi = max(r.get("times") or [lo / 1e3]) * 1e3
    return f"{_fmt_ms(lo)}-{_fmt_ms(hi)} ({r.get('n', 0)})"


TABLE_HEADERS = ["workload", "config", "mode", "median ms", "min-max ms (calls)"]


def table_rows(results, baseline="eager", reference="torch"):
    """``(headers, rows)`` of the results table: one row per (workload, config, mode).

    Columns: the median ms, the spread (min-max ms over the timed calls and
    their number), the ratio of the median to the ``baseline`` mode's (eager)
    and to the ``reference`` mode's (PyTorch) on the same configuration, and a
    note (the skip reason, a baseline's rounding note, ...).
    """
    by_key = {}
    for r in results:
        key = (r["workload"], config_label(r["config"]))
        by_key.setdefault(key, {})[r["mode"]] = r
    headers = TABLE_HEADERS + [f"/{baseline}", f"/{reference}", "note"]
    rows = []
    for (wl, cfg), modes in by_key.items():
        base = modes.get(baseline, {}).get("median_ms")
        ref = modes.get(reference, {}).get("median_ms")
        for mode, r in modes.items():
            med = r.get("median_ms")
            note = f"skipped: {r['skipped']}" if r.get("skipped") else r.get("note", "") or ""
            rows.append([wl, cfg, mode, _fmt_ms(med), _fmt_spread(r),
                         _fmt_ratio(med, base), _fmt_ratio(med, ref), note])
    return headers, rows


def format_markdown_table(results, baseline="eager", reference="torch"):
    """The results table as Markdown (``bench_results/results.md``)."""
    headers, rows = table_rows(results, baseline, reference)
    if not rows:
        return "(no results)"
    right = {3, 4, 5, 6}
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def format_table(results, baseline="eager", reference="torch"):
    """A text table of result records (see :func:`table_rows` for the columns)."""
    headers, rows = table_rows(results, baseline, reference)
    if not rows:
        return "(no results)"
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    widths[-1] = len(headers[-1])  # the note runs free at the end of the line
    right = {3, 4, 5, 6}

    def fmt(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths])]
    prev = None
    for row in rows:
        key = (row[0], row[1])
        shown = list(row)
        if key == prev:
            shown[0] = shown[1] = ""
        prev = key
        lines.append(fmt(shown))
    return "\n".join(lines)


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def write_json(path, payload):
    """Write ``payload`` as indented JSON (numpy scalars and arrays converted)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, default=_json_default)
    return path


def pyplot_or_none():
    """``matplotlib.pyplot`` with a file-only back end, or ``None`` when missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except Exception:
        return None


def save_figure(fig, out_dir, name, **savefig_kw):
    """Write ``fig`` as ``out_dir/name``, close it, and return the path."""
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    fig.savefig(path, **savefig_kw)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------
# plots: every mode visible, spreads drawn, legends outside the data

LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 2)), (0, (8, 3)))
MARKERS = ("o", "s", "^", "v", "D", "x", "+")


def mode_style(i):
    """Line style and marker of the ``i``-th mode, so curves that overlap stay visible."""
    return {"linestyle": LINE_STYLES[i % len(LINE_STYLES)], "marker": MARKERS[i % len(MARKERS)]}


def overlapping(curves, rtol=5e-3):
    """Groups (of two or more) of ``{name: values}`` whose curves coincide on a plot: every
    value within ``rtol`` relative of the group's first. In ``curves`` order."""
    groups = []
    for name, values in curves.items():
        v = np.asarray(values, dtype=np.float64)
        for group in groups:
            first = np.asarray(curves[group[0]], dtype=np.float64)
            if len(first) == len(v) and len(v) and np.all(
                    np.abs(v - first) <= rtol * np.maximum(np.abs(first), 1e-300)):
                group.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def spread_bars(rows):
    """``(medians, [below, above])`` for ``errorbar``/``bar`` ``yerr``: min-max around the
    median of each result record (NaN where a record has no timings)."""
    med = np.array([r.get("median_ms") or np.nan for r in rows], dtype=float)
    lo = np.array([r.get("min_ms") or np.nan for r in rows], dtype=float)
    hi = np.array([r.get("max_ms") or np.nan for r in rows], dtype=float)
    return med, np.vstack([med - lo, hi - med])


def legend_outside(fig, ax=None, **kwargs):
    """A legend beside the axes (right of ``ax``) or under the figure: never over the data."""
    if ax is not None:
        return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                         fontsize=kwargs.pop("fontsize", 8), **kwargs)
    handles, labels = {}, []
    for a in fig.axes:
        for h, lbl in zip(*a.get_legend_handles_labels()):
            if lbl not in handles:
                handles[lbl] = h
                labels.append(lbl)
    return fig.legend([handles[lbl] for lbl in labels], labels, loc="lower center",
                      ncol=min(len(labels), 7), fontsize=kwargs.pop("fontsize", 8),
                      bbox_to_anchor=(0.5, 0.0), frameon=False, **kwargs)
