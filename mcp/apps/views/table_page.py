"""One page of a table for the MCP Apps table view (sandbox_view_table, mcp/apps/table_tool.cc).

The server runs this module's source once per session worker (as the module _mcp_views) and then
calls page(namespace, arguments_json) for each page the view asks for, which returns the page as a
dict that the server's code sends back (mcp/apps/session_json.cc). The order of a sorted or filtered frame is kept for the
next pages, so paging a 1,000,000-row frame costs one slice once the order is known.
"""

import json
import math
import os
import weakref

MAX_CELL_CHARS = 500
MAX_ORDERS = 4

_orders = {}  # (source key, sort column, descending, filter) -> (frame ref, positions)
_files = {}  # path -> ((mtime, size), frame)


def _frame_of(namespace, source):
    import pandas

    if source.endswith((".csv", ".parquet", ".tsv")):
        path = source if source.startswith("/") else os.path.join("/mnt/data", source)
        stat = os.stat(path)
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = _files.get(path)
        if cached is None or cached[0] != stamp:
            if path.endswith(".parquet"):
                frame = pandas.read_parquet(path)
            else:
                frame = pandas.read_csv(path, sep="\t" if path.endswith(".tsv") else ",")
            _files.clear()  # one file at a time: a second large one would double the memory
            _files[path] = (stamp, frame)
        return _files[path][1]
    if not source.isidentifier():
        raise ValueError("source must be a variable name or a .csv/.parquet/.tsv file")
    if source not in namespace:
        raise NameError("the session has no variable %r" % source)
    value = namespace[source]
    if isinstance(value, pandas.Series):
        value = value.to_frame()
    if not isinstance(value, pandas.DataFrame):
        raise TypeError("%s is a %s, not a pandas DataFrame" % (source, type(value).__name__))
    return value


def _cell(value):
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, bool) or isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else str(value)
    try:
        import pandas

        if value is pandas.NaT or value is pandas.NA:
            return None
    except ImportError:
        pass
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "\u2026"


def _positions(frame, key, sort_column, descending, text):
    """The row positions in view order, or None for the frame's own order."""
    if sort_column is None and not text:
        return None
    cached = _orders.get(key)
    if cached is not None and cached[0]() is frame:
        return cached[1]
    import numpy

    positions = numpy.arange(len(frame))
    if text:
        mask = numpy.zeros(len(frame), dtype=bool)
        for index in range(frame.shape[1]):
            column = frame.iloc[:, index]
            if column.dtype.kind in "biufc":
                # A number's text holds only these: spare formatting a million numbers for
                # a filter word that no number can contain.
                if text.strip("0123456789.-+eEinfaINFA "):
                    continue
            elif column.dtype.kind == "O" and hasattr(column, "str"):
                try:
                    mask |= column.str.contains(text, case=False, regex=False).fillna(False).to_numpy(bool)
                    continue
                except (AttributeError, TypeError):
                    pass
            column = column.astype(str)
            mask |= column.str.contains(text, case=False, regex=False).to_numpy(bool)
        positions = positions[mask]
    if sort_column is not None:
        column = frame.iloc[positions, sort_column].reset_index(drop=True)
        try:
            order = column.sort_values(
                ascending=not descending, kind="stable", na_position="last"
            ).index.to_numpy()
        except TypeError:  # mixed types: by their text
            order = column.astype(str).sort_values(
                ascending=not descending, kind="stable"
            ).index.to_numpy()
        positions = positions[order]
    if len(_orders) >= MAX_ORDERS:
        _orders.pop(next(iter(_orders)))
    _orders[key] = (weakref.ref(frame), positions)
    return positions


def _page(namespace, arguments):
    source = arguments["source"]
    frame = _frame_of(namespace, source)
    offset = int(arguments.get("offset", 0))
    limit = int(arguments.get("limit", 50))
    text = arguments.get("filter") or ""
    descending = bool(arguments.get("descending", False))
    names = [str(name) for name in frame.columns]
    sort_column = None
    sort_by = arguments.get("sort_by")
    if sort_by is not None:
        if sort_by not in names:
            raise KeyError("no column named %r" % sort_by)
        sort_column = names.index(sort_by)
    key = (source, id(frame), len(frame), sort_column, descending, text)
    positions = _positions(frame, key, sort_column, descending, text)
    matched = len(frame) if positions is None else len(positions)
    offset = max(0, min(offset, matched))
    if positions is None:
        rows = frame.iloc[offset : offset + limit]
    else:
        rows = frame.iloc[positions[offset : offset + limit]]
    values = rows.itertuples(index=False, name=None)
    return {
        "columns": [
            {"name": name, "dtype": str(dtype)} for name, dtype in zip(names, frame.dtypes)
        ],
        "total_rows": len(frame),
        "matched_rows": matched,
        "offset": offset,
        "index": [_cell(label) for label in rows.index],
        "rows": [[_cell(value) for value in row] for row in values],
    }


def page(namespace, arguments_json):
    return _page(namespace, json.loads(arguments_json))
