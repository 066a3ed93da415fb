"""Downloading, with every wait bounded and every byte counted: the one place the package reads
the network (the book's published models, :mod:`attnxai.model.store.hub`; the IMDb archive,
:mod:`attnxai.data`).

:func:`download` streams one URL into a file object and stops, raising :class:`DownloadError`,
as soon as any bound is passed:

* **size**: never more than ``max_bytes`` (what the published index records for a model's file,
  the archive's known size, a cap for an index), checked while it streams, whatever the server
  says or does not say (no ``Content-Length``); a compressed answer (``Content-Encoding: gzip``)
  is decompressed here, a bounded step at a time, so a small answer cannot expand into gigabytes
  (a "gzip bomb");
* **time**: a connection within :data:`CONNECT_SECONDS`; no silence longer than
  :data:`READ_SECONDS`; after :data:`GRACE_SECONDS`, at least :data:`MIN_RATE` bytes a second on
  average (a server that sends a byte every 20 s is dropped); and a total deadline,
  :data:`GRACE_SECONDS` plus ``max_bytes`` at that rate. A lock held during a download (two
  processes download a model once) is held for that long at most.

``ATTNXAI_OFFLINE=1`` (:func:`offline`) means no network at all: :func:`download` refuses before
any connection, and its callers say what to use instead (:func:`refuse_offline`).
:func:`redact` removes the credentials of a URL (``https://user:token@host/``) from everything
shown or stored.
"""

from __future__ import annotations

import os
import time
import zlib
from typing import BinaryIO
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError

__all__ = ["CONNECT_SECONDS", "DownloadError", "ENV_OFFLINE", "GRACE_SECONDS", "MIN_RATE",
           "READ_SECONDS", "download", "offline", "redact", "refuse_offline"]

ENV_OFFLINE = "ATTNXAI_OFFLINE"
#: Seconds to connect to a server.
CONNECT_SECONDS = 15.0
#: The longest silence (seconds without a byte) a download waits through.
READ_SECONDS = 30.0
#: The slowest average a download may have once :data:`GRACE_SECONDS` have passed (bytes/s).
MIN_RATE = 16 << 10
GRACE_SECONDS = 30.0
#: Bytes read (and, compressed, decompressed) at a time.
CHUNK = 1 << 16
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}


class DownloadError(UserError, OSError):
    """A download was refused or failed: offline, a bound passed, a server error (the message
    says which)."""


def offline() -> bool:
    """``$ATTNXAI_OFFLINE`` set to 1 (true, yes, on): nothing is downloaded, nothing at all."""
    value = os.environ.get(ENV_OFFLINE, "").strip().lower()
    if value not in _TRUE | _FALSE:
        raise ValueError(f"{ENV_OFFLINE} must be 1 or 0, got {os.environ[ENV_OFFLINE]!r}")
    return value in _TRUE


def refuse_offline(what: str, instead: str) -> None:
    """Raise :class:`DownloadError` when offline: ``what`` would be downloaded, ``instead`` says
    what to give in its place."""
    if offline():
        raise DownloadError(f"{ENV_OFFLINE}={os.environ[ENV_OFFLINE]} is set, so {what} is not "
                            f"downloaded (nothing goes on the network): {instead}")


def redact(url: str) -> str:
    """``url`` without the user name and password it may carry (``https://user:pw@host/``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unreadable URL>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _decoder(encoding: str, url: str):
    """A bounded decompressor for the answer's ``Content-Encoding``, None for none."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("identity", ""):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)       # gzip or zlib, from the header
    raise DownloadError(f"{redact(url)} was sent with Content-Encoding {encoding!r}, which "
                        "attnxai does not read: refused")


def download(url: str, sink: BinaryIO, *, max_bytes: int, what: str | None = None,
             progress: bool = False) -> int:
    """Stream ``url`` into ``sink`` (a binary file object); returns the bytes written (module
    docstring: at most ``max_bytes``, every wait bounded). :class:`DownloadError` on any refusal
    or failure, after which ``sink`` holds a part of the answer the caller must discard."""
    import requests
    from tqdm.auto import tqdm

    shown = what or redact(url)
    refuse_offline(shown, "give the file on disk instead")
    deadline = GRACE_SECONDS + max_bytes / MIN_RATE
    t0 = time.monotonic()
    try:
        answer = requests.get(url, stream=True, timeout=(CONNECT_SECONDS, READ_SECONDS),
                              headers={"Accept-Encoding": "identity"})
    except requests.RequestException as exc:
        raise DownloadError(f"could not connect for {shown} ({type(exc).__name__}: "
                            f"{redact(str(exc))[:200]})") from None
    with answer:
        if answer.status_code != 200:
            raise DownloadError(f"{shown}: the server answered {answer.status_code} "
                                f"{answer.reason or ''}".rstrip())
        declared = answer.headers.get("Content-Length")
        decoder = _decoder(answer.headers.get("Content-Encoding", ""), url)
        if decoder is None and declared and declared.isdigit() and int(declared) > max_bytes:
            raise DownloadError(f"{shown} is {int(declared)} bytes, more than the {max_bytes} "
                                "expected: refused before downloading")
        bar = tqdm(total=int(declared) if declared and declared.isdigit() else None,
                   unit="B", unit_scale=True, disable=not progress, desc="download")
        written = received = 0
        try:
            while True:
                try:
                    block = answer.raw.read1(CHUNK, decode_content=False)
                except Exception as exc:  # noqa: BLE001 - urllib3/socket errors, named
                    raise DownloadError(f"the download of {shown} failed after {received} "
                                        f"bytes ({type(exc).__name__}: {str(exc)[:200]})") \
                        from None
                received += len(block)
                out = block if decoder is None else _inflate(decoder, block, max_bytes - written)
                if written + len(out) > max_bytes:
                    raise DownloadError(f"{shown} gave more than the {max_bytes} bytes expected"
                                        f"{' (decompressed)' if decoder else ''}: refused, "
                                        "stopped there")
                sink.write(out)
                written += len(out)
                bar.update(len(block))
                if not block:
                    break
                elapsed = time.monotonic() - t0
                if elapsed > deadline or (elapsed > GRACE_SECONDS
                                          and received / elapsed < MIN_RATE):
                    raise DownloadError(
                        f"the download of {shown} is too slow ({received} bytes in "
                        f"{elapsed:.0f} s; the floor is {MIN_RATE // 1024} KiB/s after "
                        f"{GRACE_SECONDS:.0f} s): stopped; try again later")
        finally:
            bar.close()
    return written


def _inflate(decoder, block: bytes, room: int) -> bytes:
    """Decompress ``block`` (``b""``: the end), never producing more than ``room + 1`` bytes
    (one more shows that the answer is too large; the rest of the input is not expanded)."""
    return decoder.decompress(block, room + 1) if block else decoder.flush()
