"""One benchmark part on one database, in its own process (Django is configured once per
process). The orchestrator (bench.cli) starts it and reads the JSON it writes."""

import argparse
import json
import sys
import time


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench worker")
    parser.add_argument(
        "task", choices=["quality", "latency", "sweep", "vague", "tune", "graphs", "relations"]
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sweep", choices=["auto", "always", "never"], default="auto")
    parser.add_argument("--entities", choices=["none", "rules"], default="none")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--breakdown-queries", type=int, default=50)
    parser.add_argument("--grid", help="vague: JSON list of Weights overrides")
    parser.add_argument("--configs", help="tune: JSON file of the settings to try")
    args = parser.parse_args(argv)

    from bench import dj

    started = time.perf_counter()
    dj.setup(args.database_url)
    setup_seconds = time.perf_counter() - started
    if args.task in ("quality", "sweep"):
        from bench import quality

        result = quality.run(
            data=args.data,
            quick=args.quick,
            sweep="always" if args.task == "sweep" else args.sweep,
            sweep_only=args.task == "sweep",
            entities=args.entities,
        )
    elif args.task == "tune":
        from bench import tune

        configs = None
        if args.configs:
            with open(args.configs) as f:
                configs = json.load(f)
        result = tune.run(data=args.data, configs=configs, quick=args.quick)
    elif args.task == "graphs":
        from bench import graphs

        size = int(args.sizes.split(",")[-1])
        result = graphs.run(memories=size, queries=args.queries)
    elif args.task == "vague":
        from bench import vague

        result = vague.run(grid=None if args.grid is None else json.loads(args.grid))
    elif args.task == "relations":
        from bench import relations

        result = relations.run()
    else:
        from bench import latency

        result = latency.run(
            sizes=[int(s) for s in args.sizes.split(",") if s],
            queries=args.queries,
            breakdown_queries=min(args.breakdown_queries, args.queries),
            data=args.data,
        )
    result["database"] = dj.database_info()
    result["migrate_seconds"] = round(setup_seconds, 1)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
