"""What a profile's generators actually reach: the maxima of every dimension
of the scenario space (space.py) and the violation shapes (shapes.py) seen
over several seeds, generated exactly as a certification run generates them
(the same search, the same swarm share and targets) but run against nothing.

    python -m conformance.properties.survey [--profile default] [--seeds 10]

prints the declared table, then what was observed; docs/scenario-space.md
holds its output for the default profile.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field

from conformance.properties import LARGE_SHARE, runner, shapes, space, strategies


@dataclass
class Survey:
    role: str
    maxima: dict[str, int] = field(default_factory=dict)
    shapes: set[str] = field(default_factory=set)
    scenarios: int = 0
    seconds: float = 0.0


def survey(role: str, profile: str = "default", seeds=range(10), examples: int | None = None) -> Survey:
    found = Survey(role, {key: 0 for key in space.ROLES[role]})
    all_shapes = shapes.KERNEL_SHAPES if role == "kernel" else shapes.PROVIDER_SHAPES
    started = time.perf_counter()

    def attempt(doc: dict):
        found.scenarios += 1
        for key, value in space.measure(role, doc).items():
            found.maxima[key] = max(found.maxima[key], value)
        found.shapes |= {name for name, shows in all_shapes.items() if name not in found.shapes and shows(doc)}
        return [], None
    for seed in seeds:
        run = runner.PropertyRun(profile=profile, seed=seed, examples=examples, shrink=False)
        strategy = strategies.kernel_scenarios(LARGE_SHARE[profile]) if role == "kernel" else \
            strategies.provider_scenarios(LARGE_SHARE[profile], shapes.PROVIDER_OWN_NAME)
        runner._search(run, strategy, attempt, lambda doc: space.targets(role, doc))
    found.seconds = time.perf_counter() - started
    return found


def maxima_table(surveys: list[Survey]) -> str:
    """The maxima observed beside the most the generators can draw."""
    lines = ["| role | dimension | can reach | observed maximum |", "|---|---|---|---|"]
    for found in surveys:
        for key, value in found.maxima.items():
            d = space.ROLES[found.role][key]
            lines.append(f"| {found.role} | {d.what} | {space.number(d.reaches, d.unit)} | "
                         f"{space.number(value, d.unit)} |")
    return "\n".join(lines)


def shapes_report(surveys: list[Survey]) -> str:
    lines = []
    for found in surveys:
        names = shapes.KERNEL_SHAPES if found.role == "kernel" else shapes.PROVIDER_SHAPES
        missing = [n for n in names if n not in found.shapes]
        lines.append(f"{found.role}: {len(names) - len(missing)} of {len(names)} shapes seen in {found.scenarios} "
                     f"scenarios ({found.seconds:.0f}s)" + "".join(f"\n  not seen: {n}" for n in missing))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.properties.survey", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", choices=sorted(LARGE_SHARE))
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    args = parser.parse_args(argv)
    print(space.table())
    surveys = [survey(role, args.profile, range(args.seeds)) for role in space.ROLES]
    print(f"\nObserved under the {args.profile} profile, seeds 0..{args.seeds - 1}:\n")
    print(maxima_table(surveys))
    print()
    print(shapes_report(surveys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
