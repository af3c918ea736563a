"""``en.function`` on data chunked by rows (Dask arrays): split, run per chunk, combine."""
from .run import ChunkedFunction  # noqa: F401
