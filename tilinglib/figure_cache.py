"""A lesson plot's picture kept in the disk cache, so that a second run of a lesson shows it
without drawing it or importing matplotlib (issue 19: the lessons under nbval).

`cached(owner)` decorates a plot function that makes its own figure when its argument
`owner` (``ax`` or ``axes``) is None. Under Jupyter's inline backend, in a notebook kernel,
with the disk cache on (`tilinglib.toolchain.disk_cache`; off in the grader's sandbox):

- a miss draws as before; when the cell ends, if the figure was not changed after the
  function returned (matplotlib marks a changed figure stale; `plots.finished` marks a
  finished one drawn), the display bundle that the inline backend would send (the PNG and its
  text) is made once, sent, and stored, and the figure is closed so that it is not drawn again;
- a hit returns a stand-in for the Axes and sends the stored bundle when the cell ends. The
  stand-in's repr and the text IPython shows for it as a cell's value are the real result's,
  stored with the picture; its first real use (an attribute, an index, unpacking) draws the
  real figure instead, which the inline backend then shows as usual, changes included.

The key: the function, its arguments (pickled), the versions of matplotlib,
matplotlib-inline, IPython and NumPy, the matplotlibrc files matplotlib would read, its
font list, MPLBACKEND, and the shell's display formats and InlineBackend settings. It is used
only while matplotlib's settings are the ones a fresh kernel has (matplotlib not imported
yet, or imported by a lesson plot's draw with rcParams unchanged since) and the notebook's
namespace holds nothing of matplotlib's (a student's ``plt`` may save or show the current
figure after the call); anything else (a student's own matplotlib, another backend) draws
as before and stores nothing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from pathlib import Path

from .toolchain import disk_cache

NAMESPACE = "figures"
_state: dict = {}           # "pristine": rcParams' hash after this process's first plot
_pending: list = []         # this cell's plots: _Hit or _Miss, in call order


def cached(owner: str):
    """Decorator: the plot function's picture kept on disk when its argument `owner` is None
    (see the module's docstring). The function's result is unchanged on a miss; on a hit it
    is a stand-in that becomes the real result on first use."""
    def wrap(func):
        import inspect

        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return func(*args, **kwargs)
            key = None
            if bound.arguments.get(owner) is None:
                key = key_for(func, args, kwargs)
            if key is None:
                return func(*args, **kwargs)
            bundle = disk_cache.get(NAMESPACE, key)
            if bundle is not None:
                hit = _Hit(func, args, kwargs, bundle)
                _queue(hit)
                return hit.stand_in
            result = func(*args, **kwargs)
            figure = _figure_of(result)
            _note_pristine()
            if figure is not None:
                _queue(_Miss(key, figure, _texts(result)))
            return result
        return wrapper
    return wrap


def _shell():
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    return shell if type(shell).__name__ == "ZMQInteractiveShell" else None


def _inline() -> bool:
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        backend = os.environ.get("MPLBACKEND", "")
    else:
        backend = mpl.rcParams._get_backend_or_none() or ""
    return "matplotlib_inline.backend_inline" in backend or backend == "inline"


def _rc_hash() -> str:
    mpl = sys.modules["matplotlib"]
    items = sorted((k, repr(v)) for k, v in dict.items(mpl.rcParams))
    return hashlib.sha256(repr(items).encode()).hexdigest()


def _note_pristine() -> None:
    if "pristine" not in _state and "matplotlib" in sys.modules:
        _state["pristine"] = _rc_hash()


def _files() -> list:
    """(path, bytes) of the matplotlibrc files matplotlib may read, and its font list."""
    home = Path.home()
    config = os.environ.get("MPLCONFIGDIR")
    config_dir = Path(config) if config else \
        Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "matplotlib"
    cache_dir = Path(config) if config else \
        Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "matplotlib"
    paths = [Path.cwd() / "matplotlibrc", config_dir / "matplotlibrc"]
    if os.environ.get("MATPLOTLIBRC"):
        rc = Path(os.environ["MATPLOTLIBRC"])
        paths.append(rc / "matplotlibrc" if rc.is_dir() else rc)
    paths += sorted(cache_dir.glob("fontlist-v*.json")) if cache_dir.is_dir() else []
    found = []
    for path in paths:
        try:
            found.append((str(path), hashlib.sha256(path.read_bytes()).hexdigest()))
        except OSError:
            found.append((str(path), None))
    return found


def _versions() -> tuple:
    if "versions" not in _state:
        from importlib import metadata

        found = []
        for name in ("matplotlib", "matplotlib-inline", "ipython", "numpy"):
            try:
                found.append(metadata.version(name))
            except metadata.PackageNotFoundError:
                found.append(None)
        _state["versions"] = tuple(found)
    return _state["versions"]


def key_for(func, args: tuple, kwargs: dict) -> str | None:
    """The cache key of `func(*args, **kwargs)`'s picture here and now, or None when the
    picture may not be kept: not in a notebook kernel, not the inline backend, matplotlib's
    settings not a fresh kernel's, the disk cache off, or arguments that cannot be pickled."""
    shell = _shell()
    if shell is None or disk_cache.cache_dir() is None or not _inline():
        return None
    if not _fresh_settings() or not _shown_by_this_cell(shell) or _user_has_matplotlib(shell):
        return None
    return _key(shell, func, args, kwargs)


def _key(shell, func, args: tuple, kwargs: dict) -> str | None:
    try:
        arguments = pickle.dumps((args, sorted(kwargs.items())), protocol=4)
    except Exception:
        return None
    try:
        settings = _inline_settings()
    except Exception:
        return None
    return disk_cache.key_of(
        f"{func.__module__}.{func.__qualname__}", hashlib.sha256(arguments).hexdigest(),
        _versions(), tuple(_files()), os.environ.get("MPLBACKEND"),
        tuple(sorted(shell.display_formatter.active_types)),
        repr(shell.config.get("InlineBackend", {})), repr(settings))


def _fresh_settings() -> bool:
    """Whether matplotlib's settings are a fresh process's: not imported yet, or imported
    by a lesson plot here with rcParams unchanged since."""
    return "matplotlib" not in sys.modules or _state.get("pristine") == _rc_hash()


def _user_has_matplotlib(shell) -> bool:
    """Whether the notebook's namespace holds matplotlib or pyplot (or a function or class
    of theirs): then a plot may be followed by plt.savefig, plt.show or plt.gcf(), which a
    picture from the cache would not serve, so the figure is drawn."""
    import types

    for value in list(shell.user_ns.values()):
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(value, (types.FunctionType, type)):
            name = getattr(value, "__module__", None) or ""
        else:
            continue
        if name == "matplotlib" or name.startswith(("matplotlib.", "pylab")):
            return True
    return False


def _shown_by_this_cell(shell) -> bool:
    """Whether what is displayed now goes to the running cell's output when the cell ends:
    False in a widget's callback (no cell runs; the inline backend shows a figure at once
    there) and inside an ipywidgets Output's `with` block (its capture ends before the cell)."""
    parent = shell.get_parent() if hasattr(shell, "get_parent") else None
    if not parent or parent.get("header", {}).get("msg_type") != "execute_request":
        return False
    widget = sys.modules.get("ipywidgets.widgets.widget")
    output = sys.modules.get("ipywidgets.widgets.widget_output")
    if widget is not None and output is not None:
        for instance in list(getattr(widget, "_instances", {}).values()):
            if isinstance(instance, output.Output) and instance.msg_id:
                return False
    return True


def show_now(plot, *args, **kwargs) -> None:
    """Draw `plot(*args, **kwargs)` (a function decorated with `cached`) and show it at once,
    as ``plot(...); plt.show()`` does under the inline backend: for a widget's callback or
    an ipywidgets Output's `with` block, where the cell's end is not where the picture
    goes. The picture comes from the disk cache when it is there (then matplotlib is not
    imported), and is kept there when drawn."""
    from IPython.display import display

    func = getattr(plot, "__wrapped__", plot)
    shell = _shell()
    key = None
    if shell is not None and disk_cache.cache_dir() is not None and _inline() \
            and _fresh_settings():
        key = _key(shell, func, args, kwargs)
    bundle = disk_cache.get(NAMESPACE, key) if key is not None else None
    if bundle is not None:
        display(bundle[0], raw=True, metadata=bundle[1])
        return
    result = func(*args, **kwargs)
    _note_pristine()
    import matplotlib.pyplot as plt

    figure = _figure_of(result)
    if key is None or figure is None or shell is None:
        plt.show()
        return
    data, metadata = _bundle(shell, figure)
    display(data, raw=True, metadata=metadata)
    disk_cache.put(NAMESPACE, key, (data, metadata) + _texts(result))
    plt.close(figure)


def _bundle(shell, figure) -> tuple:
    """What the inline backend sends for `figure`: the display formatter's data and
    metadata, with its figure metadata (a background for a transparent figure) merged."""
    from matplotlib_inline.backend_inline import _fetch_figure_metadata

    data, metadata = shell.display_formatter.format(figure)
    extra = _fetch_figure_metadata(figure)
    if extra:
        metadata = {**metadata, **extra}
    return data, metadata


def cached_png(name: str, parts: tuple, render) -> bytes:
    """PNG bytes that `render()` makes (a figure saved with savefig, e.g. a widget's
    picture), kept in the disk cache under `name`, `parts` (str, numbers, tuples of them)
    and the versions, rc files and font list of `key_for`; drawn (and kept) when missing or
    when matplotlib's settings are not a fresh process's."""
    key = None
    if disk_cache.cache_dir() is not None and _fresh_settings():
        key = disk_cache.key_of("png", name, parts, _versions(), tuple(_files()))
        png = disk_cache.get(NAMESPACE, key)
        if isinstance(png, bytes):
            return png
    png = render()
    _note_pristine()
    if key is not None:
        disk_cache.put(NAMESPACE, key, png)
    return png


def _inline_settings():
    """The inline backend's formats, print_figure arguments and rc where they differ from
    its defaults, else "default" (also while matplotlib_inline is not imported: importing it
    imports matplotlib; and its instance is never made here, which would skip the user's
    configuration)."""
    config = sys.modules.get("matplotlib_inline.config")
    if config is None or not config.InlineBackend.initialized():
        return "default"
    traits = config.InlineBackend.class_traits()
    made = config.InlineBackend.instance()
    found, default = [], []
    for name in ("figure_formats", "print_figure_kwargs", "rc"):
        for value, into in ((getattr(made, name), found), (traits[name].default(), default)):
            into.append(repr(sorted(value.items()) if isinstance(value, dict) else sorted(value)))
    return "default" if found == default else tuple(found)


def _figure_of(result):
    first = result
    if isinstance(result, (tuple, list)) and result:
        first = result[0]
    elif hasattr(result, "flat") and not hasattr(result, "figure"):
        first = next(iter(result.flat), None)
    return getattr(first, "figure", None)


def _texts(result) -> tuple:
    """What the shell shows for `result` as a cell's value (IPython displays it when a
    cell's last line is the call, without a semicolon, or when history is off, as under
    nbval), and its repr: the stand-in shows these without drawing."""
    return _shell().display_formatter.formatters["text/plain"](result), repr(result)


def _queue(entry) -> None:
    _pending.append(entry)
    shell = _shell()
    callbacks = shell.events.callbacks["post_execute"]
    if _flush in callbacks:
        callbacks.remove(_flush)
    callbacks.insert(0, _flush)         # before the inline backend's flush_figures


def _flush() -> None:
    """post_execute: the cell's cached pictures sent, its new ones made, sent and stored."""
    entries = list(_pending)
    _pending.clear()
    from IPython.display import display

    for entry in entries:
        if isinstance(entry, _Hit):
            if entry.result is _Hit.UNSET:
                data, metadata = entry.bundle[:2]
                display(data, raw=True, metadata=metadata)
            continue
        figure = entry.figure
        import matplotlib.pyplot as plt

        if figure.stale or not plt.fignum_exists(figure.number):
            continue                    # changed after the function returned: left as it is
        data, metadata = _bundle(_shell(), figure)
        if not data:
            continue
        display(data, raw=True, metadata=metadata)
        disk_cache.put(NAMESPACE, entry.key, (data, metadata) + entry.texts)
        plt.close(figure)


class _Miss:
    def __init__(self, key: str, figure, texts: tuple):
        self.key, self.figure, self.texts = key, figure, texts


class _Hit:
    UNSET = object()

    def __init__(self, func, args, kwargs, bundle):
        self.func, self.args, self.kwargs, self.bundle = func, args, kwargs, bundle
        self.result = _Hit.UNSET
        self.stand_in = _StandIn(self)

    def real(self):
        if self.result is _Hit.UNSET:
            self.result = self.func(*self.args, **self.kwargs)
            _note_pristine()
        return self.result


class _StandIn:
    """What a plot function returns on a hit: its real result, drawn on first use."""

    __slots__ = ("_hit",)

    def __init__(self, hit: _Hit):
        object.__setattr__(self, "_hit", hit)

    def __getattr__(self, name):
        # IPython's formatters probe for these (none of which an Axes, a tuple or an array
        # of them has): answered without drawing
        if name.startswith(("_repr_", "_ipython_")) or name == "_mimebundle_":
            raise AttributeError(name)
        return getattr(self._hit.real(), name)

    def _repr_pretty_(self, printer, cycle):
        if self._hit.result is _Hit.UNSET:
            printer.text(self._hit.bundle[2])
        else:
            printer.pretty(self._hit.result)

    def __setattr__(self, name, value):
        setattr(self._hit.real(), name, value)

    def __getitem__(self, index):
        return self._hit.real()[index]

    def __iter__(self):
        return iter(self._hit.real())

    def __len__(self):
        return len(self._hit.real())

    def __repr__(self):
        if self._hit.result is _Hit.UNSET:
            return self._hit.bundle[3]
        return repr(self._hit.result)
