"""Rich values: a trailing expression's value, arrays made readable, matplotlib figures as PNG.

matplotlib is never imported here at module level: a run that does not use it pays nothing. The
runner sets ``MPLBACKEND=module://<runner>.mpl_backend`` before the snippet runs, so when the
snippet imports ``matplotlib.pyplot`` its ``plt.show()`` lands in ``flush_figures`` below; figures
still open when the snippet ends are sent too, as Jupyter's inline backend does.
"""

from __future__ import annotations

import base64
import io
import pprint
import struct
import sys

from . import common

# Arrays with more elements than this (numpy's own summarising threshold) are shown as a summary
# display event rather than a full repr.
SUMMARY_THRESHOLD = 1000
# Above this many bytes an array's values are not copied to the host for the summary.
HOST_COPY_LIMIT = 256 * 1024**2
# Statistics (min/max/mean/std) only below this many elements, to keep the display fast.
STATS_LIMIT = 50_000_000
FIGURE_DPI = 100


def _is_array(value) -> bool:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return True
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(value, jax.Array) and not _is_tracer(value)


def _is_tracer(value) -> bool:
    from .jaxcompat import is_tracer

    return is_tracer(value)


class Shown:
    """A result that was shown as it was made (a jaxplay helper printed its table, or sent it to
    the Compiled or Timing pane). Left as a snippet's last expression it shows nothing more: its
    repr (``<Comparison of …>``) after the table it printed only says the same thing worse. In
    Jupyter an object with ``_ipython_display_`` is shown by that method alone, so the same
    result in a notebook is not echoed either."""

    def _ipython_display_(self) -> None:
        pass


def show_value(value) -> None:
    """Show a value the way Jupyter shows a cell's result."""
    if isinstance(value, Shown):
        return
    if _is_array(value) and getattr(value, "size", 0) > SUMMARY_THRESHOLD:
        show_array(value)
        return
    png = _repr_png(value)
    if png is not None:
        _send_png(png, text=_safe_repr(value))
        return
    text = _format(value)
    print(text, flush=True)


def _repr_png(value) -> bytes | None:
    if isinstance(value, type):
        return None
    method = getattr(type(value), "_repr_png_", None)
    if method is None:
        return None
    try:
        data = method(value)
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return None
    return data if isinstance(data, (bytes, bytearray)) and data[:8] == b"\x89PNG\r\n\x1a\n" else None


def _safe_repr(value) -> str:
    try:
        return repr(value)
    except Exception as exc:  # noqa: BLE001 - user values and JAX internals raise anything
        return f"<{type(value).__name__} (repr failed: {exc})>"


def _format(value) -> str:
    if isinstance(value, (dict, list, tuple, set)) and not _is_array(value):
        try:
            text = repr(value)
            if len(text) > 100:
                return pprint.pformat(value, width=100, sort_dicts=False)
            return text
        except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
            pass
    return _safe_repr(value)


# -- arrays ---------------------------------------------------------------------------------


def array_info(x) -> dict:
    """Shape, dtype, size, device(s) and sharding of a numpy or JAX array."""
    import numpy as np

    info = {
        "shape": list(x.shape),
        "dtype": str(x.dtype),
        "size": int(x.size),
        "nbytes": int(getattr(x, "nbytes", x.size * np.dtype(x.dtype).itemsize)),
    }
    if isinstance(x, np.ndarray):
        info.update(array_type="numpy.ndarray", devices=["host"], sharding=None)
    else:
        try:
            devices = sorted(x.devices(), key=lambda d: d.id)
            info["devices"] = [f"{d.platform}:{d.id}" for d in devices]
        except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
            info["devices"] = []
        try:
            info["sharding"] = str(x.sharding)
            spec = getattr(x.sharding, "spec", None)
            info["partition_spec"] = str(spec) if spec is not None else None
        except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
            info["sharding"] = None
        info["array_type"] = "jax.Array"
    return info


def _stats(host) -> dict | None:
    import numpy as np

    if host is None or host.size == 0 or host.size > STATS_LIMIT:
        return None
    if not (np.issubdtype(host.dtype, np.number) or host.dtype == np.bool_) or np.iscomplexobj(host):
        return None
    try:
        data = host.astype(np.float64) if host.dtype.itemsize < 4 or host.dtype == np.bool_ else host
        with np.errstate(all="ignore"):
            out = {
                "min": float(np.nanmin(data)),
                "max": float(np.nanmax(data)),
                "mean": float(np.nanmean(data)),
                "std": float(np.nanstd(data)),
            }
            nans = int(np.isnan(data).sum()) if np.issubdtype(data.dtype, np.floating) else 0
        if nans:
            out["nans"] = nans
        return out
    except Exception:  # noqa: BLE001 - extended dtypes (PRNG keys...) and the like
        return None


def _host_copy(x):
    import numpy as np

    if isinstance(x, np.ndarray):
        return x
    if getattr(x, "nbytes", 0) > HOST_COPY_LIMIT:
        return None
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return None


def _corners(x):
    """A small array of x's corners (3 per side and axis), fetched without copying x."""
    import numpy as np

    index = []
    for n in x.shape:
        index.append(slice(None) if n <= 6 else np.r_[0:3, n - 3:n])
    try:
        return np.asarray(x[np.ix_(*[np.arange(n) if isinstance(i, slice) else i
                                     for i, n in zip(index, x.shape)])])
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return None


def array_summary(x) -> tuple[dict, str]:
    """(structured fields, readable text) for a large array."""
    import numpy as np

    info = array_info(x)
    host = _host_copy(x)
    stats = _stats(host)
    kind = "Array" if info["array_type"] == "jax.Array" else "ndarray"
    header = (f"{kind} {info['dtype']}{list(x.shape)} · {common.human_bytes_binary(info['nbytes'])}")
    where = ", ".join(info["devices"][:8]) + (" …" if len(info["devices"]) > 8 else "")
    if info["array_type"] == "jax.Array":
        header += f" · on {where}"
        if info.get("sharding"):
            sharding = info["sharding"]
            header += f"\nsharding: {sharding if len(sharding) <= 200 else sharding[:199] + '…'}"
    lines = [header]
    if stats:
        lines.append("min {min:.6g}  max {max:.6g}  mean {mean:.6g}  std {std:.6g}".format(**stats)
                     + (f"  NaNs {stats['nans']}" if stats.get("nans") else ""))
    values = host if host is not None else _corners(x)
    if values is not None:
        try:
            text = np.array2string(values, threshold=SUMMARY_THRESHOLD, edgeitems=3,
                                   max_line_width=100)
            if host is None:
                lines.append("corners (3 per side of each axis):")
            lines.append(text)
        except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
            pass
    info["stats"] = stats
    return info, "\n".join(lines)


def show_array(x, label: str | None = None) -> None:
    info, text = array_summary(x)
    common.send("display", kind="array", mime="text/plain", text=text, label=label, **info)


# -- figures --------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return None
    return struct.unpack(">II", data[16:24])


def _send_png(data: bytes, *, text: str, **fields) -> None:
    size = _png_size(data)
    common.send(
        "display",
        kind="figure",
        mime="image/png",
        data=base64.b64encode(data).decode("ascii"),
        width=size[0] if size else None,
        height=size[1] if size else None,
        text=text,
        **fields,
    )


def snippet_line() -> int | None:
    """The line of the snippet being run now (the innermost frame of the snippet's own code)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == common.SNIPPET_FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


def send_figure(fig) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIGURE_DPI, bbox_inches="tight")
    axes = len(fig.get_axes())
    w, h = fig.get_size_inches() * fig.dpi
    text = f"<Figure size {w:g}x{h:g} with {axes} Axes>"
    line = getattr(fig, "_playground_line", None) or snippet_line()
    _send_png(buf.getvalue(), text=text, figure=getattr(fig, "number", None), line=line)


def flush_figures() -> None:
    """Send every open pyplot figure as a PNG and close them (``plt.show()`` and run end)."""
    if "matplotlib.pyplot" not in sys.modules:
        return
    try:
        from matplotlib._pylab_helpers import Gcf
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return
    managers = Gcf.get_all_fig_managers()
    for manager in managers:
        try:
            send_figure(manager.canvas.figure)
        except Exception as exc:  # noqa: BLE001 - user values and JAX internals raise anything
            common._stderr(f"[playground] a figure could not be drawn: {type(exc).__name__}: {exc}")
    if managers:
        plt.close("all")
