"""The command line: `python -m picoflow.scenarios run PATH...` and `... export SESSION_ID`.

Exit status: 0 when every turn of every run went as expected, 1 when any failed, 2 when a file
or an option was refused (before anything ran).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from picoflow.scenarios._export import ExportError, export_to_file
from picoflow.scenarios._formats import REPORT_SUFFIXES, write_report
from picoflow.scenarios._judge import Judge
from picoflow.scenarios._load import ScenarioFileError, load_scenario, scenario_paths
from picoflow.scenarios._report import ScenarioReport, SuiteReport
from picoflow.scenarios._runner import play
from picoflow.scenarios._schema import Scenario, scenario_schema
from picoflow.scenarios._setup import Setup, SetupError, flows_from, providers_from

__all__ = ["main"]

REFUSED = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "export":
        return _export(args)
    if args.command == "schema":
        print(json.dumps(scenario_schema(), indent=2))
        return 0
    try:
        scenarios = _load_all(args.paths)
        setup = _setup(args)
    except (ScenarioFileError, SetupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return REFUSED
    try:
        suite = asyncio.run(_run_all(scenarios, setup, args))
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return REFUSED
    _print_suite(suite, args.repeat)
    if args.report:
        write_report(suite, args.report)
        print(f"Report written to {args.report}")
    return 0 if suite.passed else 1


def _load_all(paths: Sequence[str]) -> list[tuple[str, Scenario]]:
    """Every scenario, each validated, before any runs (X1)."""
    files = scenario_paths(paths)
    if not files:
        raise ScenarioFileError(
            f"No scenario files under {', '.join(paths)}; name *.scenario.json or "
            "*.scenario.yaml files or folders that hold them.",
            source=", ".join(paths),
        )
    return [(str(path), load_scenario(path)) for path in files]


def _setup(args: argparse.Namespace) -> Setup:
    if args.repeat < 1:
        raise SetupError(f"--repeat must be 1 or more, got {args.repeat}.")
    if args.report and not args.report.endswith(REPORT_SUFFIXES):
        raise SetupError(f"--report {args.report!r}: name a .md, .json or .xml file.")
    if args.url and args.model:
        raise SetupError("--model cannot change a live server's model; drop --model or --url.")
    return Setup(
        flows=flows_from(args.flows),
        store_url=args.store,
        url=args.url,
        model=args.model,
        providers=providers_from(args.provider),
    )


async def _run_all(
    scenarios: list[tuple[str, Scenario]], setup: Setup, args: argparse.Namespace
) -> SuiteReport:
    suite = SuiteReport()
    try:
        setup.check([scenario.flow_name for _, scenario in scenarios])
        judge = Judge(setup.model_for(args.judge, "--judge")) if args.judge else None
        users = _users(scenarios, setup, args.user)
        plan = [(s, run) for s in scenarios for run in range(1, args.repeat + 1)]
        for (source, scenario), run in _progress(plan):
            target = setup.target(scenario.flow_name)
            user = users.get(source)
            report = await play(target, scenario, source=source, judge=judge, user=user, run=run)
            suite.runs.append(report)
            if not args.quiet:
                _print_run(report, args.repeat)
    finally:
        await setup.aclose()
    return suite


def _users(
    scenarios: list[tuple[str, Scenario]], setup: Setup, option: str | None
) -> dict[str, BaseChatModel]:
    """The user model of each simulated scenario: --user, else the file's `userModel`."""
    given = setup.model_for(option, "--user") if option else None
    users = {}
    for source, scenario in scenarios:
        if not scenario.is_simulated:
            continue
        if given is None and scenario.user_model is None:
            raise SetupError(
                f"{source} has a simulated user (persona and goal) but no userModel; pass "
                "the model that plays it with --user provider:model."
            )
        users[source] = given or setup.model_for(str(scenario.user_model), "userModel")
    return users


def _progress(plan: list[Any]) -> Iterable[Any]:
    """A progress bar on long runs when tqdm is installed and stderr is a terminal."""
    if len(plan) < 10 or not sys.stderr.isatty():
        return plan
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return plan
    bar: Callable[..., Iterable[Any]] = tqdm
    return bar(plan, unit="scenario", file=sys.stderr)


def _print_run(report: ScenarioReport, repeat: int) -> None:
    suffix = f" (run {report.run})" if repeat > 1 else ""
    print(f"== {report.source}{suffix}")
    for turn in report.turns:
        print(f"  {turn.line()}")
    print(report.summary())


def _print_suite(suite: SuiteReport, repeat: int) -> None:
    passed = sum(run.passed for run in suite.runs)
    print(f"{passed}/{len(suite.runs)} scenario runs passed")
    scores = ", ".join(f"{k}={v}" for k, v in suite.scores.items() if v is not None)
    print(f"Scores: {scores}")
    if repeat > 1:
        for source, rate in suite.pass_rates().items():
            print(f"Pass rate {source}: {rate:.0%}")


def _export(args: argparse.Namespace) -> int:
    try:
        path = asyncio.run(export_to_file(args.session_id, args.store, args.out))
    except (ExportError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return REFUSED
    print(f"Scenario written to {path}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.scenarios",
        description="Run conversation scenarios against flows, or export a session as one.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run scenario files (or folders of them)")
    run.add_argument("paths", nargs="+", help="*.scenario.json / *.scenario.yaml or folders")
    run.add_argument("--flows", action="append", default=[], help="module:Flow[,module:Flow]")
    run.add_argument("--store", help="store URL (default: memory:); with --url, the server's")
    run.add_argument("--url", help="a live server to run against, e.g. http://127.0.0.1:8000")
    run.add_argument("--model", help="provider:model to run every flow on instead of its own")
    run.add_argument("--judge", help="provider:model that judges each turn's label too")
    run.add_argument("--user", help="provider:model that plays simulated users")
    run.add_argument(
        "--provider", action="append", default=[], help="name=module:factory, another provider"
    )
    run.add_argument("--report", help="write a report: out.md, out.json or out.xml (JUnit)")
    run.add_argument("--repeat", type=int, default=1, help="run each scenario N times")
    run.add_argument("--quiet", action="store_true", help="print only the summary")
    commands.add_parser("schema", help="print the JSON Schema of a scenario file")
    export = commands.add_parser("export", help="write a stored session as a scenario")
    export.add_argument("session_id", help="the session to export")
    export.add_argument("--store", required=True, help="the store URL the session is in")
    export.add_argument("--out", type=Path, help="the file to write (default: <flow>-<id>...)")
    return parser
