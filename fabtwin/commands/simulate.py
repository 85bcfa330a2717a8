"""`fabtwin simulate` and `fabtwin generate`: a what-if scenario on the twin, or as a bundle."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fabtwin.commands.common import command, fail, os_failure, progress, quiet_option


@command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
@click.option("--fct-csv", "fct_csv", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every flow's completion as htsim does (id,src,dst,size_bytes,start_us,"
                   "finish_us; the .cm ids kept), replaced only when the run succeeds.")
@click.option("--draws", type=click.IntRange(min=1), default=None,
              help="ECMP hash draws pooled in the completion statistics (median, p99, max, "
                   "--json too): fabric seeds seed, seed+1, ... Default: enough to pool 1,000 "
                   "flows, ceil(1000 / flows) (8 for 128 flows, 1 for 1,000 or more), as "
                   "benchmarks/htsim_calibration.py; 1: the scenario's seed alone.")
@quiet_option
def simulate(scenario: Path, as_json: bool, fct_csv: Path | None, draws: int | None,
             quiet: bool) -> None:
    """Run a what-if SCENARIO.toml on the twin (format: twin/scenario.py, examples in scenarios/).

    With an ECMP plane, which flows collide is one draw of the switches' hash salts: the
    completion statistics pool ceil(1000 / flows) draws (see --draws); --fct-csv, the jobs
    and the busiest links are the first draw's (the scenario's seed).
    """
    from collectors.store.outputs import OutputError, check_output_folder
    from twin.scenario import ScenarioError, load, run
    from twin.topology import TopologyError

    try:
        sc = load(scenario)
        if fct_csv is not None:  # checked before the run: a mistake costs no simulation
            check_output_folder(fct_csv)
            _not_an_input(fct_csv, [scenario, sc.flows_file])
        with progress(quiet, f"simulate {scenario}"):
            outcome = run(sc, draws=draws)
    except (ScenarioError, TopologyError, OutputError) as exc:
        fail(str(exc))
    except OSError as exc:  # unreadable
        os_failure(exc)
    if fct_csv is not None:
        try:
            _write_fct_csv(fct_csv, outcome)
        except OSError as exc:
            os_failure(exc, fct_csv)
    out = outcome.as_json()
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    fab = out["fabric"]
    click.echo(f"fabric   {fab['hosts']} hosts, {fab['endpoints']} endpoints, {fab['planes']} plane(s), "
               f"{fab['tiers']} tiers, {fab['switches']} switches, {fab['links']} links; "
               f"balancing {'/'.join(out['balancing']['modes'])}, NIC {out['balancing']['nic']}")
    if (t := out["transport"]) is not None:
        click.echo(f"transport {t['payload_bytes']:g} + {t['header_bytes']:g} bytes a packet, "
                   f"PFC {'on' if t['lossless'] else 'off'}, "
                   f"{'done at the last ACK' if t['acked'] else 'done at the last byte sent'}")
    for j in out["jobs"]:
        t = j["completion_s"]
        click.echo(f"job      {j['name']}: {j['collective']} of {j['size_bytes'] / 2**20:.1f} MiB on "
                   f"{j['ranks']} ranks: " + (f"{t * 1e3:.3f} ms, algbw {j['algbw_GBps']:.2f} GB/s, "
                                               f"busbw {j['busbw_GBps']:.2f} GB/s" if t else "did not finish"))
    fl = out["flows"]
    if fl["fct_median_s"] is not None:
        pooled = (f" (pooled over {fl['hash_draws']} ECMP hash draws, {fl['pooled_count']} flows)"
                  if fl["hash_draws"] > 1 else "")
        click.echo(f"flows    {fl['finished']} of {fl['count']} finished; completion median "
                   f"{fl['fct_median_s'] * 1e6:.1f} us, p99 {fl['fct_p99_s'] * 1e6:.1f} us, "
                   f"max {fl['fct_max_s'] * 1e6:.1f} us{pooled}")
    for link in out["busiest_links"][:5]:
        click.echo(f"busiest  {link['link']}  {link['utilization'] * 100:.1f}%")
    if fct_csv is not None:
        click.echo(f"wrote    {fct_csv}: {fl['count']} flows")
    click.echo(f"took     {out['wall_s']:.3f} s wall, {out['events']} events")


def _not_an_input(output: Path, inputs: list) -> None:
    """OutputError when `output` is one of the run's input files (under any name)."""
    from collectors.store.outputs import OutputError

    for given in inputs:
        if given is None:
            continue
        same = Path(output).resolve() == Path(given).resolve()
        if not same and Path(output).exists() and Path(given).exists():
            same = Path(output).samefile(given)  # a hard link or a symlink to the input
        if same:
            raise OutputError(f"{output}: is the input {given}; write elsewhere")


def _write_fct_csv(path: Path, outcome) -> None:
    """htsim's per-flow CSV, written beside `path` and moved over it once complete."""
    import csv

    from collectors.store.outputs import replacing
    from twin.scenario import FCT_COLUMNS

    with replacing(path) as tmp, open(tmp, "x", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(FCT_COLUMNS)
        w.writerows(("" if v is None else v for v in row) for row in outcome.fct_rows())



@command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New or empty directory, or a bundle generate wrote (its files replaced).")
@click.option("--seed", default=0, show_default=True, help="Same scenario and seed: same bytes.")
@quiet_option
def generate(scenario: Path, out: Path, seed: int, quiet: bool) -> None:
    """Write a synthetic trace bundle for SCENARIO.toml, with labels.json (format: twin/synth/__init__.py).

    --out must be new, empty, or a bundle generate wrote: then only the files it wrote are
    replaced. Any other folder is refused (exit 2) and left as it was.
    """
    from twin.scenario import ScenarioError
    from twin.synth import OutputError
    from twin.synth import generate as write_bundle
    from twin.topology import TopologyError

    try:
        with progress(quiet, f"generate {out}"):
            g = write_bundle(scenario, out, seed=seed)
    except (ScenarioError, TopologyError, OutputError) as exc:
        fail(str(exc))
    except OSError as exc:  # an unwritable --out (PermissionError), a full disk
        os_failure(exc)
    kinds = ", ".join(f["kind"] for f in g.labels["faults"]) or "none (healthy)"
    click.echo(f"wrote {g.files} files to {out}: faults {kinds}; "
               f"{g.labels['malformed_lines']} malformed lines (see labels.json)")

