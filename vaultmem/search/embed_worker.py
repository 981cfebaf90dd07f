"""Embedding an import's next texts in a second process (search/ahead.py).

A thread embedding beside the adds shares the interpreter lock with them: each model
run hands the lock back and forth with the adds' Python (measured: a pure-Python loop
beside it made 2,000 texts take 18 s instead of 3; a 10k checked import lost as much
time to the hand-overs as the thread saved). A process has its own. It loads the same
model with the same settings (the vectors are the same bits: the same runs as
`vectors.embed_texts` makes in the parent), reads requests on stdin and answers on
stdout, one at a time, and ends when its stdin closes (the parent is done, or died).

The protocol, in frames of a 4-byte little-endian length and that many bytes: the
first frame from the parent is the model's settings (JSON), then each request is a
JSON list of texts; each answer is a JSON header `{"rows": n, "dim": d}` (or
`{"error": "..."}`) followed by a frame of n × d float32 values.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

_LENGTH = struct.Struct("<I")
_BOOT = ("import sys; home = sys.argv[1]; home in sys.path or sys.path.insert(0, home); "
         "from vaultmem.search.embed_worker import main; main()")


def _write_frame(stream: BinaryIO, data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_frame(stream: BinaryIO) -> bytes:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the embedding process ended")
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the embedding process ended mid-answer")
    return data


class EmbedWorker:
    """The parent's side: a child process running `settings`' model (OnnxEmbedder's
    arguments), started on the first call. Not thread-safe: one caller at a time (the
    single background thread of EmbedAhead)."""

    def __init__(self, settings: dict):
        self._settings = settings
        self._child: subprocess.Popen | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 passage vectors, as `vectors.embed_texts` makes them in
        order (texts in the order given). Raises OSError/EOFError/RuntimeError when the child
        cannot run them (the caller embeds them itself)."""
        child = self._start()
        try:
            _write_frame(child.stdin, json.dumps(list(texts)).encode("utf-8"))
            header = json.loads(_read_frame(child.stdout))
            if "error" in header:
                raise RuntimeError(header["error"])
            rows, dim = int(header["rows"]), int(header["dim"])
            return np.frombuffer(_read_frame(child.stdout), dtype=np.float32).reshape(rows, dim)
        except BaseException:
            self.close()
            raise

    def _start(self) -> subprocess.Popen:
        if self._child is not None:
            return self._child
        # The vaultmem this process imported, whichever way it was found: where an installed
        # package is, the child finds it itself; a checkout this process put on its path goes
        # first on the child's (nothing else is put ahead of the standard library).
        home = str(Path(__file__).resolve().parents[2])
        flags = ["-I"] if sys.flags.isolated else [*(["-E"] if sys.flags.ignore_environment else []),
                                                   *(["-s"] if sys.flags.no_user_site else [])]
        child = subprocess.Popen([sys.executable, *flags, "-c", _BOOT, home], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._child = child
        try:
            _write_frame(child.stdin, json.dumps(self._settings).encode("utf-8"))
        except OSError:
            self.close()
            raise
        return child

    def close(self) -> None:
        """End the child (it exits when its stdin closes); waits briefly, then kills it."""
        child, self._child = self._child, None
        if child is None:
            return
        for stream in (child.stdin, child.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The child's loop: load the model the first frame names, then answer requests
    until stdin closes."""
    from vaultmem.search.embed import OnnxEmbedder
    from vaultmem.search.vectors import embed_texts

    settings = json.loads(_read_frame(stdin))
    try:
        embedder = OnnxEmbedder(**settings)
        # One run at a time: the parent's adds have the other core.
        embedder.runs_at_once = 1
        failure = None
    except Exception as exc:  # noqa: BLE001 - said to the parent, which embeds itself
        embedder, failure = None, f"{type(exc).__name__}: {exc}"
    while True:
        try:
            texts = json.loads(_read_frame(stdin))
        except EOFError:
            return
        if embedder is None:
            _write_frame(stdout, json.dumps({"error": failure}).encode("utf-8"))
            continue
        try:
            by_key = embed_texts(embedder, {str(i): text for i, text in enumerate(texts)})
            matrix = np.vstack([by_key[str(i)] for i in range(len(texts))]).astype(np.float32) if texts \
                else np.zeros((0, embedder.dim), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001
            _write_frame(stdout, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode("utf-8"))
            continue
        _write_frame(stdout, json.dumps({"rows": matrix.shape[0], "dim": matrix.shape[1]}).encode("utf-8"))
        _write_frame(stdout, np.ascontiguousarray(matrix).tobytes())


def main() -> None:
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
