"""Ingest throughput and peak memory against DuckDB's own readers of the same files.

    python benchmarks/ingest_bench.py [--samples 5000000] [--dir bench_out] [--small-files 2000]
        [--parse-only] [--bundle DIR ...] [--skip-big]

Generates N counter samples twice: as gnmic `event` JSON lines (one event per port and time,
8 counter values each, values as JSON strings the way Cumulus streams them) and as Prometheus
text with ms timestamps (one sample per line). Each measurement runs in a fresh process:
`fabtwin ingest` end to end into a new store, and DuckDB's `read_json` / `read_csv` of the same
file into a table. Prints samples/s, peak RSS and the ratio of the two times, and the time
DuckDB takes to copy the samples we wrote into a new store file (the floor of writing them).
`--small-files N` also times a bundle of N small gnmic event files (one per switch port, 64
samples each, the shape of a long capture cut per device and hour) and prints the cost per file. `--parse-only` also
times each file's parser alone (no store), on one core (`POLARS_MAX_THREADS=1`), as samples per
CPU second: the per-core figure a pool of parsing processes scales. `--bundle DIR` times
`ingest_bundle` of existing bundles (the real shapes: gzip, one value per line, status words).
Run by hand, never from the tests.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

NS = 1_000_000_000
T0 = 1_796_007_600 * NS
LEAVES = [f"leaf-p0-{i:03d}" for i in range(1, 257)]
PORTS = [f"swp{i}" for i in range(1, 65)]
COUNTERS = ("in-octets", "out-octets", "in-pkts", "out-pkts", "in-discards", "out-discards",
            "in-errors", "out-errors")
PROM_METRICS = ("nvswitch_interface_if_in_octets", "nvswitch_interface_if_out_octets",
                "nvswitch_interface_if_in_ucast_pkts", "nvswitch_interface_if_out_ucast_pkts",
                "nvswitch_interface_if_in_discards", "nvswitch_interface_if_out_discards",
                "nvswitch_interface_if_in_errors", "nvswitch_interface_if_out_errors")
# the Prometheus lines as space-separated columns, quotes off (label values hold them)
PROM_CSV = ("delim=' ', quote='', escape='', header=false, comment='#', auto_detect=false, "
            "columns={'series': 'VARCHAR', 'value': 'DOUBLE', 'ts': 'BIGINT'}")


def _steps(samples: int) -> int:
    return -(-samples // (len(LEAVES) * len(PORTS) * len(COUNTERS)))


def write_gnmic_event(path: Path, samples: int) -> int:
    """gnmic event JSON lines; returns the number of samples written."""
    n = 0
    with open(path, "w") as fh:
        for step in range(_steps(samples)):
            ts = T0 + step * 10 * NS
            for d, leaf in enumerate(LEAVES):
                for p, port in enumerate(PORTS):
                    base = (d * 64 + p) * 1_000_000 + step * 12_500_000_000
                    values = {f"/interfaces/interface/state/counters/{c}": str(base + i)
                              for i, c in enumerate(COUNTERS)}
                    fh.write(json.dumps({"name": "fabric", "timestamp": ts, "tags": {
                        "interface_name": port, "source": f"{leaf}:9339",
                        "subscription-name": "fabric"}, "values": values}, separators=(",", ":")))
                    fh.write("\n")
                    n += len(COUNTERS)
    return n


def write_prom(path: Path, samples: int) -> int:
    """Prometheus text with ms timestamps (what /federate serves); returns the sample count."""
    n = 0
    with open(path, "w") as fh:
        for m in PROM_METRICS:
            fh.write(f"# TYPE {m} counter\n")
        for step in range(_steps(samples)):
            ts_ms = (T0 + step * 10 * NS) // 1_000_000
            lines = []
            for d, leaf in enumerate(LEAVES):
                for p, port in enumerate(PORTS):
                    base = (d * 64 + p) * 1_000_000 + step * 12_500_000_000
                    for i, m in enumerate(PROM_METRICS):
                        lines.append(f'{m}{{instance="{leaf}:9100",interface="{port}"}} {base + i} {ts_ms}\n')
            fh.writelines(lines)
            n += len(lines)
    return n


def generated(path: Path, samples: int, write) -> int:
    """`write(path, samples)` unless a run with the same `samples` left the file (a sidecar
    `.samples` file says so); returns the file's sample count."""
    mark = path.with_suffix(path.suffix + ".samples")
    if path.is_file() and mark.is_file():
        asked, n = (int(x) for x in mark.read_text().split())
        if asked == samples:
            return n
    n = write(path, samples)
    mark.write_text(f"{samples} {n}\n")
    return n


def write_small_files(root: Path, count: int) -> int:
    """`count` small gnmic event files of 8 events (64 samples) each; returns the sample count."""
    root.mkdir(parents=True, exist_ok=True)
    n = 0
    for k in range(count):
        leaf, port = LEAVES[k // len(PORTS) % len(LEAVES)], PORTS[k % len(PORTS)]
        with open(root / f"{leaf}__{port}.{k // (len(LEAVES) * len(PORTS))}.jsonl", "w") as fh:
            for step in range(8):
                values = {f"/interfaces/interface/state/counters/{c}": str(k * 1000 + step * 8 + i)
                          for i, c in enumerate(COUNTERS)}
                fh.write(json.dumps({"name": "fabric", "timestamp": T0 + step * 10 * NS, "tags": {
                    "interface_name": port, "source": f"{leaf}:9339"}, "values": values},
                    separators=(",", ":")) + "\n")
                n += len(values)
    return n


def measure_small(root: Path, db: Path, files: int, samples: int) -> None:
    """Print the end-to-end ingest time of a bundle of many small files, per file."""
    for p in (db, Path(str(db) + ".wal")):
        if p.exists():
            os.remove(p)
    wall, rss, out = run_child(f"""
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
with Store.open({str(db)!r}) as s:
    r = ingest_bundle(s, {str(root)!r})
    print(r.totals["samples"], r.totals["files"])
""")
    loaded, nfiles = (int(x) for x in out.split())
    assert (loaded, nfiles) == (samples, files), (loaded, nfiles)
    print(f"{files:,} small files ({samples:,} samples): {wall:.2f} s, "
          f"{1000 * wall / files:.1f} ms per file, peak {rss:.0f} MB")


def run_child(code: str) -> tuple[float, float, str]:
    """Run python code in a fresh process: (wall seconds, peak RSS in MB, stdout). The peak is
    the process's own plus the largest of its children's (a parsing child or pool worker runs
    beside it), so it bounds what the ingest held at once."""
    code += ("\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + "
             "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    *lines, peak_kb = out.stdout.strip().splitlines()
    return wall, int(peak_kb) / 1024, "\n".join(lines)


def measure_parse(path: Path, rel: str) -> tuple[float, float, int]:
    """The file's parser alone in a fresh one-core process: (CPU s, wall s, samples)."""
    code = f"""
import resource, time
from pathlib import Path
import pyarrow  # imported by every ingest anyway (collectors.formats.normalized)
from collectors.store.ingest import head_of
from collectors.registry import recognize
from collectors.core.source import Sink, SourceFile
path = Path({str(path)!r})
parser = recognize(head_of(path), {rel!r})
sink = Sink(flush=lambda table, rows: None)
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
parser.parse(SourceFile(path, {rel!r}), sink)
sink.close()
r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
print(cpu, t1 - t0, sink.rows["samples"])
"""
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def measure_bundle(bundle: Path, db: Path) -> None:
    """Print the end-to-end ingest of an existing bundle."""
    for p in (db, Path(str(db) + ".wal")):
        if p.exists():
            os.remove(p)
    wall, rss, out = run_child(f"""
import time
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
with Store.open({str(db)!r}) as s:
    t = time.perf_counter()
    r = ingest_bundle(s, {str(bundle)!r})
    print(time.perf_counter() - t, r.totals["samples"], sum(f.rejected for f in r.files))
""")
    inner, samples, rejected = out.split()
    n = int(samples)
    print(f"bundle {bundle}: {n:,} samples ({rejected} rejects) in {wall:.2f} s "
          f"({n / wall:,.0f}/s; {float(inner):.2f} s in ingest_bundle, {n / float(inner):,.0f}/s), "
          f"peak {rss:.0f} MB")


def measure(path: Path, db: Path, reference_sql: str) -> dict:
    ours = f"""
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
with Store.open({str(db)!r}) as s:
    r = ingest_bundle(s, {str(path)!r})
    print(r.totals["samples"], sum(f.rejected for f in r.files))
"""
    ref = f"""
import duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(\"\"\"{reference_sql}\"\"\")
print(con.execute("SELECT count(*) FROM t").fetchone()[0])
"""
    copy_db = db.with_suffix(".copy.duckdb")
    copy = f"""
import duckdb
con = duckdb.connect({str(copy_db)!r})
con.execute("SET enable_progress_bar = false")
con.execute("ATTACH '{db}' AS s (READ_ONLY)")
con.execute("CREATE TABLE t AS SELECT * FROM s.samples")
print(con.execute("SELECT count(*) FROM t").fetchone()[0])
"""
    wall_ref, rss_ref, out_ref = run_child(ref)
    wall, rss, out = run_child(ours)
    loaded, rejected = (int(x) for x in out.split())
    for p in (copy_db, Path(str(copy_db) + ".wal")):
        if p.exists():
            os.remove(p)
    wall_copy, _, _ = run_child(copy)
    os.remove(copy_db)
    return {"loaded": loaded, "rejected": rejected, "wall": wall, "rss_mb": rss,
            "ref_rows": int(out_ref), "ref_wall": wall_ref, "ref_rss_mb": rss_ref,
            "copy_wall": wall_copy}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5_000_000)
    ap.add_argument("--dir", type=Path, default=Path("bench_out"))
    ap.add_argument("--gzip", action="store_true", help="also time gzip-compressed inputs")
    ap.add_argument("--small-files", type=int, default=0, metavar="N",
                    help="also time a bundle of N small files")
    ap.add_argument("--skip-big", action="store_true",
                    help="not the generated big files (only --small-files / --bundle)")
    ap.add_argument("--parse-only", action="store_true",
                    help="also time each parser alone, per core")
    ap.add_argument("--bundle", type=Path, action="append", default=[], metavar="DIR",
                    help="also time the ingest of this existing bundle (repeatable)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    for i, bundle in enumerate(args.bundle):
        measure_bundle(bundle, args.dir / f"bench_bundle_{i}.duckdb")
    if args.small_files:
        small = args.dir / f"small_{args.small_files}"
        if not small.is_dir():
            n_small = write_small_files(small, args.small_files)
        else:
            n_small = 8 * len(COUNTERS) * args.small_files
        measure_small(small, args.dir / "bench_small.duckdb", args.small_files, n_small)
    if args.skip_big:
        return
    cases = []
    ev = args.dir / "gnmic_event.jsonl"
    pr = args.dir / "metrics.prom"
    t = time.perf_counter()
    n_ev = generated(ev, args.samples, write_gnmic_event)
    n_pr = generated(pr, args.samples, write_prom)
    print(f"{n_ev:,} + {n_pr:,} samples ready in {time.perf_counter() - t:.1f} s "
          f"({ev.stat().st_size / 1e6:.0f} MB, {pr.stat().st_size / 1e6:.0f} MB)")
    cases.append(("gnmic event JSONL", ev, n_ev,
                  f"CREATE TABLE t AS SELECT * FROM read_json('{ev}', format='newline_delimited')"))
    cases.append(("Prometheus text", pr, n_pr,
                  f"CREATE TABLE t AS SELECT * FROM read_csv('{pr}', {PROM_CSV})"))
    if args.gzip:
        for name, path, n, _ in list(cases):
            gz = path.with_suffix(path.suffix + ".gz")
            with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
                dst.write(src.read())
            cases.append((name + " (gzip)", gz, n, f"CREATE TABLE t AS SELECT * FROM "
                          f"{'read_json' if 'json' in name.lower() else 'read_csv'}('{gz}'"
                          + (", format='newline_delimited')" if "json" in name.lower() else
                             f", {PROM_CSV})")))
    print(f"{'input':<26}{'samples':>11}{'ours s':>9}{'ours/s':>12}{'peak MB':>9}"
          f"{'duckdb s':>10}{'rows/s':>12}{'ratio':>7}{'copy s':>8}")
    for name, path, n, ref_sql in cases:
        db = args.dir / f"bench_{re.sub(r'[^a-z0-9]+', '_', name.lower())}.duckdb"
        for p in (db, Path(str(db) + ".wal")):
            if p.exists():
                os.remove(p)
        r = measure(path, db, ref_sql)
        assert r["loaded"] == n and r["rejected"] == 0, r
        print(f"{name:<26}{n:>11,}{r['wall']:>9.2f}{n / r['wall']:>12,.0f}{r['rss_mb']:>9.0f}"
              f"{r['ref_wall']:>10.2f}{r['ref_rows'] / r['ref_wall']:>12,.0f}"
              f"{r['wall'] / r['ref_wall']:>7.2f}{r['copy_wall']:>8.2f}")
    print("ratio = our wall time / DuckDB's reader on the same file (lower is better); "
          "peak MB = the ingesting process's max RSS\nplus its largest child's; copy s = DuckDB "
          "writing the samples we wrote (our store's table) into a new store file:\nthe floor "
          "of writing them at all")
    if args.parse_only:
        print(f"{'parser alone, one core':<26}{'samples':>11}{'cpu s':>9}{'per cpu-s':>12}"
              f"{'wall s':>9}")
        for name, path, n, _ in cases:
            rel = ("prom/" if "Prometheus" in name else "gnmi/") + path.name
            cpu, wall, got = measure_parse(path, rel)
            assert got == n, (got, n)
            print(f"{name:<26}{n:>11,}{cpu:>9.2f}{n / cpu:>12,.0f}{wall:>9.2f}")


if __name__ == "__main__":
    main()
