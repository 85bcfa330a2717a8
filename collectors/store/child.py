"""Parse one big file in a child process, streaming its batches back while the store inserts.

A parser whose per-record work is Python (`python_bound = True`: gnmic's JSON lines) holds the
GIL for most of its time, so on a thread beside the store's inserts the two take turns on one
core. In a child process it has a core of its own: the child parses and sends each batch as
soon as the Sink flushes it; this process receives them on a thread into a short queue (so the
child never waits for an insert), converts the samples (`frame_of`) and inserts them in the
file's transaction (`Store.ingest_file(parsed=...)`) with one DuckDB thread (the other core is
the child's).

A 5.1M-sample gnmic event file, `ingest_bundle` alone, three alternations: 5.83-5.93 s with the
parser on a thread, 4.44-4.59 s streamed from a child. Parsers whose work is already polars
(Prometheus) gain nothing, and lose the trip through the pipe: they stay on the thread.

All or nothing as before: the accounting (records read, loaded, rejected) arrives after the
last batch, and a child that fails (an exception, or killed) makes the file fail with its
error, its rows rolled back by the store.
"""

from __future__ import annotations

import os
import pickle
import queue
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from multiprocessing import get_context
from multiprocessing.connection import Connection
from typing import Any

from collectors.core.source import Sink, SourceFile, run_parser
from collectors.store.pool import (
    ParsedFile,
    ignore_interrupts,
    keep_as,
    packed,
    unpack_batch,
    watch_parent,
)

# a file at least this big is parsed in a child when its parser is `python_bound` (smaller
# ones: starting the child, about 0.4 s of imports, would cost more than it saves)
CHILD_MIN_BYTES = 8 << 20
QUEUE_BATCHES = 4  # batches received and not inserted yet, at most (each up to ~20 MB)


class ChildDied(RuntimeError):
    """The parsing child ended without finishing its file (killed from outside, or by the
    kernel for memory)."""


def wants_child(parser: Any, size: int, workers: int) -> bool:
    """Whether a file of `size` bytes is parsed in a child (`workers` > 1: cores to spare)."""
    return workers > 1 and getattr(parser, "python_bound", False) and size >= CHILD_MIN_BYTES


def _child_main(conn: Connection, parser: Any, src: SourceFile, addresses: dict,
                ifmaps: dict, parent: int) -> None:
    """The child: parse `src`, send ("batch", table, buf) per flush, then ("done", accounting)
    or ("error", exception)."""
    ignore_interrupts()
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    try:
        # samples go as the parser gave them: the store converts them (`frame_of`) as it
        # inserts, on the core the child leaves it (4.3-4.5 s against 4.7-4.8 when the child
        # converted them, for a 5.1M-sample gnmic file)
        keep = keep_as(parser.family, convert=False)

        def send(table: str, buf: object) -> None:
            conn.send(("batch", table, packed(keep(table, buf))))

        sink = Sink(flush=send, addresses=addresses, ifmaps=ifmaps)
        run_parser(parser, src, sink)
        conn.send(("done", (sink.loaded, sink.rejected, dict(sink.rows), sink.first_reject,
                            sink.ended_early, sink.time_source)))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, as is
        _send_error(conn, exc)
    finally:
        conn.close()


def _send_error(conn: Connection, exc: BaseException) -> None:
    """Send `exc` to the parent (its text, if it does not pickle); nothing if the parent is
    gone (the pipe is closed: nobody is left to tell)."""
    with suppress(OSError):
        try:
            conn.send(("error", exc))
        except (pickle.PicklingError, TypeError, AttributeError):
            conn.send(("error", RuntimeError("".join(traceback.format_exception(exc)))))


@contextmanager
def parse_in_child(parser: Any, src: SourceFile, sha: str, addresses: dict,
                   ifmaps: dict) -> Iterator[ParsedFile]:
    """A `ParsedFile` whose `batches` stream from a child parsing `src`; its accounting is
    filled when they are exhausted. The child's exception is raised there (a child that
    died: ChildDied, a RuntimeError). Leaving the block stops the child if it still runs."""
    ctx = get_context("spawn")  # not fork: this process holds DuckDB's and polars' threads
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, name=f"fabtwin-parse {src.rel}", daemon=True,
                       args=(send, parser, src, addresses, ifmaps, os.getpid()))
    proc.start()
    send.close()
    inbox: queue.Queue = queue.Queue(maxsize=QUEUE_BATCHES)
    stop = threading.Event()

    def receive() -> None:
        while not stop.is_set():
            try:
                msg = recv.recv()
                if msg[0] == "batch":
                    msg = ("batch", msg[1], unpack_batch(msg[2]))
            except (EOFError, OSError):
                proc.join(timeout=5)
                msg = ("error", ChildDied(
                    f"{src.rel}: the parsing process ended without finishing the file "
                    f"(exit code {proc.exitcode})"))
            except Exception as exc:  # noqa: BLE001 - a message that does not read back
                msg = ("error", RuntimeError(f"{src.rel}: a message of the parsing process "
                                             f"could not be read ({exc!r})"))
            while not stop.is_set():
                try:
                    inbox.put(msg, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if msg[0] != "batch":
                return

    reader = threading.Thread(target=receive, name="fabtwin-receive", daemon=True)
    reader.start()
    out = ParsedFile(src.rel, sha, "parsed")

    def batches() -> Iterator[tuple[str, object]]:
        while True:
            msg = inbox.get()
            if msg[0] == "batch":
                yield msg[1], msg[2]
            elif msg[0] == "done":
                (out.loaded, out.rejected, out.rows, out.first_reject, out.ended_early,
                 out.time_source) = msg[1]
                return
            else:
                raise msg[1]

    out.batches = batches()  # type: ignore[assignment]
    try:
        yield out
    finally:
        stop.set()
        if proc.is_alive():
            proc.kill()
        proc.join()
        reader.join()
        recv.close()
