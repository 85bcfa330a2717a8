"""`fabtwin sweep`: a family of what-if simulations, ranked by impact (format: twin/sweep.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from fabtwin.commands.common import command, fail, os_failure, progress, quiet_option


@command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--ray", "ray_address", metavar="ADDRESS",
              help="Run on Ray: `local` starts one here, else auto or ray://host:port.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Local processes (or CPUs of a local Ray); default: this machine's cores.")
@click.option("--top", default=10, show_default=True, help="Variants shown (--json: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the ranked sweep as one JSON object.")
@quiet_option
def sweep(scenario: Path, ray_address: str | None, workers: int | None, top: int, as_json: bool,
          quiet: bool) -> None:
    """Simulate every variant of SCENARIO.toml's [sweep] (each spine link failed, each leaf in
    ECMP, convergence times...) and rank them by their worst job's slowdown."""
    from twin.parallel import ExecutorError
    from twin.scenario import ScenarioError
    from twin.sweep import load_sweep, run_sweep
    from twin.topology import TopologyError

    try:
        with progress(quiet, f"sweep {scenario}"):
            sw = load_sweep(scenario)
            report = run_sweep(sw, executor="ray" if ray_address else "local",
                               workers=workers or os.cpu_count() or 1, address=ray_address)
    except (ScenarioError, TopologyError, ExecutorError) as exc:
        fail(str(exc))
    except OSError as exc:  # an unreadable scenario
        os_failure(exc, scenario)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    run = report["run"]
    where = f"Ray {run['address']}" if run["executor"] == "ray" else "local processes"
    click.echo(f"sweep    {report['scenario']}: {report['tasks'] - 1} variants + baseline on "
               f"{where} x{run['workers']}, {run['wall_s']:.1f} s")
    for j in report["baseline"]["jobs"]:
        click.echo(f"baseline {j['name']}: {_ms(j['completion_s'])}, busbw {j['busbw_GBps']:.2f} GB/s")
    click.echo(f"{'rank':>4} {'impact':>8}  variant")
    for v in report["variants"][:top]:
        impact = f"{v['impact']:.2f}x" if v["impact"] is not None else "stalls"
        click.echo(f"{v['rank']:>4} {impact:>8}  {_variant(v)}")
        for j in v["jobs"]:
            click.echo(f"{'':>15}{j['name']}: {_ms(j['completion_s'])}, busbw {j['busbw_GBps']:.2f} GB/s "
                       f"({-100 * j['busbw_drop']:+.1f}%)")
    if len(report["variants"]) > top:
        click.echo(f"... {len(report['variants']) - top} more (--top N, or --json for all)")


def _ms(t: float | None) -> str:
    return f"{t * 1e3:.3f} ms" if t is not None else "did not finish"


def _variant(v: dict) -> str:
    parts = []
    if v["fail"]:
        parts.append(f"fail {v['fail']} at {v['fail_at_ms']:g} ms")
    if v["ecmp_leaf"]:
        parts.append(f"{v['ecmp_leaf']} in ECMP")
    if v["convergence_ms"] is not None:
        parts.append(f"convergence {v['convergence_ms']:g} ms")
    return ", ".join(parts)
