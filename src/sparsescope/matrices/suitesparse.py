"""SuiteSparse Matrix Collection matrices by ``Group/Name``, cached on disk.

Cache layout, under ``$SPARSESCOPE_CACHE`` or ``platformdirs.user_cache_dir("sparsescope")``::

    suitesparse/<Group>/<Name>.tar.gz       the archive as downloaded (kept)
    suitesparse/<Group>/<Name>/<Name>.mtx   the matrix, extracted from it

An existing ``.mtx`` is used as it is; an existing ``.tar.gz`` is extracted without downloading.
Otherwise the archive is downloaded from :data:`BASE_URL` (the collection's public Matrix Market
mirror); with no network, or with ``SPARSESCOPE_OFFLINE=1`` (no download is tried), a
:class:`MatrixNotAvailableError` says which URL to fetch by hand and where to put the file.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from sparsescope.errors import MatrixFormatError, MatrixNotAvailableError, UsageError

BASE_URL = "https://suitesparse-collection-website.herokuapp.com/MM"
#: Socket timeout while an archive streams (a stalled read): archives run to gigabytes.
DOWNLOAD_TIMEOUT_S = 60.0
#: Timeout of reaching the server (name lookup and TCP connect), before any download: with
#: no network a missing matrix fails within seconds, not after the read timeout.
CONNECT_TIMEOUT_S = 5.0
_NAME_PART = re.compile(r"^[A-Za-z0-9_.+-]+$")


def cache_root() -> Path:
    """``$SPARSESCOPE_CACHE`` when set, else the per-user cache folder of sparsescope."""
    env = os.environ.get("SPARSESCOPE_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("sparsescope"))


def is_offline() -> bool:
    """``$SPARSESCOPE_OFFLINE`` is set to something other than ``0``/``no``/``false``/empty:
    nothing is downloaded, a missing file fails at once."""
    return os.environ.get("SPARSESCOPE_OFFLINE", "").strip().lower() not in ("", "0", "no",
                                                                              "false")


def split_name(group_name: str) -> tuple[str, str]:
    """Check and split ``Group/Name``."""
    parts = group_name.strip().split("/")
    if len(parts) != 2 or not all(_NAME_PART.match(part) for part in parts) or \
            any(part in (".", "..") for part in parts):
        raise UsageError(
            f"bad SuiteSparse matrix name {group_name!r}: expected 'Group/Name', e.g. "
            "'Williams/cant'")
    return parts[0], parts[1]


def suitesparse_url(group: str, name: str) -> str:
    return f"{BASE_URL}/{group}/{name}.tar.gz"


def _reachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Connect to ``url``'s host and port within ``timeout_s`` (an ``OSError`` otherwise)."""
    import socket
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with socket.create_connection((parts.hostname, port), timeout=timeout_s):
        pass


def _download(url: str, dest: Path, timeout_s: float = DOWNLOAD_TIMEOUT_S) -> None:
    """Stream ``url`` to ``dest`` (through a temp file beside it) with a progress bar, after
    checking within :data:`CONNECT_TIMEOUT_S` that its server can be reached."""
    from sparsescope.progress import quiet_tqdm

    tqdm = quiet_tqdm()

    _reachable(url, min(timeout_s, CONNECT_TIMEOUT_S))
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response, \
                os.fdopen(fd, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, file=sys.stderr,
                      disable=not sys.stderr.isatty()) as bar:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    bar.update(len(chunk))
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _extract(archive: Path, group_dir: Path, name: str) -> None:
    """Extract ``<Name>/<Name>.mtx`` only (SuiteSparse archives also hold right-hand sides such
    as ``<Name>/<Name>_b.mtx``), capped in members and bytes
    (:func:`~sparsescope.matrices.archive.extract_matrix`)."""
    from sparsescope.matrices.archive import extract_into

    extract_into(archive, group_dir / name / f"{name}.mtx", name)


def fetch_suitesparse(group_name: str, *, cache_dir: str | os.PathLike | None = None,
                      download: bool = True) -> Path:
    """Return the path of ``Group/Name``'s ``.mtx`` in the cache, downloading it if needed.

    Raises :class:`MatrixNotAvailableError` when it is not cached and cannot be downloaded
    (``download=False``, ``SPARSESCOPE_OFFLINE=1`` or no network), naming the URL and the
    place to put the file.
    """
    group, name = split_name(group_name)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    group_dir = root / "suitesparse" / group
    mtx = group_dir / name / f"{name}.mtx"
    archive = group_dir / f"{name}.tar.gz"
    if mtx.is_file():
        return mtx
    url = suitesparse_url(group, name)
    if not archive.is_file():
        how = (f"fetch {url} and place it at {archive} (or extract its {name}/{name}.mtx to "
               f"{mtx})")
        if not download or is_offline():
            why = "SPARSESCOPE_OFFLINE is set" if download else "downloading is off"
            raise MatrixNotAvailableError(f"{group}/{name} is not in the cache ({why}); {how}")
        try:
            group_dir.mkdir(parents=True, exist_ok=True)
            _download(url, archive)
        except (urllib.error.URLError, OSError, TimeoutError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise MatrixNotAvailableError(
                f"cannot download {group}/{name} ({reason}); {how}") from None
    _extract(archive, group_dir, name)
    if not mtx.is_file():
        raise MatrixFormatError(str(archive), f"the archive holds no {name}/{name}.mtx")
    return mtx
