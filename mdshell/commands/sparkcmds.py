"""``sql`` and ``tables``: heavy queries on Spark. pyspark is imported only when they run."""

from __future__ import annotations

from typing import Any

from .base import ArgParser, CommandError, Result, command
from .results import Text
from .shell import Shell

SQL_USAGE = 'sql [--csv FILE] [--parquet DIR] "QUERY"'


# What the spark extra brings that `sql` imports (pyspark[sql] brings pyarrow and pandas);
# on a Spark Connect server, mdshell's own client: no pyspark, no pandas. (module, package)
SPARK_PACKAGES = (("pyspark", "pyspark"), ("pyarrow", "pyarrow"), ("pandas", "pandas"),
                  ("numpy", "numpy"))
CONNECT_PACKAGES = (("pyarrow", "pyarrow"), ("numpy", "numpy"), ("grpc", "grpcio"))
SPARK_INSTALL = ("pip install 'mdshell[spark]' (in a clone of mdshell: pip install -e "
                 "'.[spark]'); Spark also needs Java 17 or later")


def _spark_modules() -> Any:
    """mdshell.spark.query, or one clear line naming every package of the spark extra that
    is missing and the one command that installs them."""
    from ..spark.settings import SETTINGS

    needed = CONNECT_PACKAGES if SETTINGS.resolved_remote() else SPARK_PACKAGES
    missing = [package for module, package in needed if not _importable(module)]
    if missing:
        raise CommandError(f"Spark queries need the spark extra, and {_listed(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not installed: "
                           f"{SPARK_INSTALL}")
    from ..spark import query

    return query


def spark_remote() -> str | None:
    """The Spark Connect server queries go to (``--spark-remote``, ``$SPARK_REMOTE``);
    None when mdshell starts Spark of its own."""
    from ..spark.settings import SETTINGS

    return SETTINGS.resolved_remote()


def _importable(name: str) -> bool:
    """Whether the module is installed (found, not imported: pandas alone takes a third of
    a second to import, and a query on a Spark Connect server never needs it)."""
    from importlib.util import find_spec

    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


@command("sql", "Run a Spark SQL query over the image and its log (see `tables`).", SQL_USAGE,
         details="Tables: records, topics, partitions, brokers, controllers, endpoints, "
                 "features, supported_features, configs, acls, quotas, scram_users, tokens, "
                 "partition_changes, voters (`tables` lists their columns). They show the "
                 "current image (after `at`, the image at that offset); secrets are redacted "
                 "unless --show-secrets. Quote the query as one word in the shell, e.g. "
                 "sql \"select leader, count(*) from partitions group by leader\". The first "
                 "query starts Spark (local[*], or --spark-master URL / "
                 "$MDSHELL_SPARK_MASTER; spark.* keys of --config are its settings), or runs "
                 "on a Spark Connect server (--spark-remote sc://HOST:PORT / $SPARK_REMOTE, "
                 "no JVM here; --csv/--parquet are then written here); its log "
                 "goes to ~/.cache/mdshell/spark/spark-PID.log ($MDSHELL_SPARK_LOG). --csv "
                 "FILE writes "
                 "the result as CSV, --parquet DIR as Parquet (both written by Spark's writers, "
                 "so any size); a result shown has at most 10,000 rows (the count says how "
                 "many there are). spark.driver.memory in --config sizes the driver (1g).",
         completes_paths=False, options=("--csv", "--parquet"),
         values={"--csv": "", "--parquet": ""})
def sql(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("sql", SQL_USAGE)
    p.add_argument("--csv")
    p.add_argument("--parquet")
    p.add_argument("query", nargs="+")
    ns = p.parse_args(args)
    query = _spark_modules()
    from ..spark.tables import View

    view = View(shell.session.source, shell.session.loaded, shell.opts.show_secrets)
    try:
        return _sql(query, view, ns)
    except query.Cancelled as e:  # Ctrl-C: the jobs were cancelled
        return Result(errors=[str(e)], exit_code=130)
    except KeyboardInterrupt:  # Ctrl-C outside a job (building a table)
        return Result(errors=["query cancelled"], exit_code=130)


def _sql(query: Any, view: Any, ns: Any) -> Result:
    df, warnings = query.run(view, " ".join(ns.query))
    if ns.parquet:
        n = query.cancellable(lambda: query.write_parquet(query.get_session(), df,
                                                          ns.parquet))
        return Result(value=Text([f"wrote {n} rows to {ns.parquet}"],
                                 {"rows": n, "parquet": ns.parquet}), warnings=warnings)
    if ns.csv:
        n = query.cancellable(lambda: query.write_csv(df, ns.csv))
        return Result(value=Text([f"wrote {n} rows to {ns.csv}"], {"rows": n, "csv": ns.csv}),
                      warnings=warnings)
    table, total = query.cancellable(lambda: query.collect_limited(df))
    if total > table.num_rows:  # said in JSON too (the text form's last line says it)
        warnings = [*warnings, f"the query gave {total} rows; the first {table.num_rows} are "
                    "shown (--csv FILE or --parquet DIR writes them all)"]
    return Result(value=Text(query.text_lines(table, total), lambda: query.rows(table)),
                  warnings=warnings)


@command("tables", "List the tables `sql` can query, with their columns.", "tables [NAME]",
         completes_paths=False,
         details="Names, what each table holds and its columns with their Spark SQL types. "
                 "It needs neither Spark nor pyspark (sql does).")
def tables_cmd(shell: Shell, args: list[str]) -> Result:
    from ..spark.catalog import CATALOG

    p = ArgParser("tables", "tables [NAME]")
    p.add_argument("name", nargs="?")
    ns = p.parse_args(args)
    if ns.name is not None and ns.name not in CATALOG:
        raise CommandError(f"{ns.name}: no such table (known: {', '.join(CATALOG)})")
    shown = [ns.name] if ns.name is not None else list(CATALOG)
    lines: list[str] = []
    for name in shown:
        what, columns = CATALOG[name]
        lines.append(f"{name}: {what}")
        lines += [f"    {c} {t}" for c, t in columns]
    described = {name: {"description": CATALOG[name][0],
                        "columns": [{"name": c, "type": t} for c, t in CATALOG[name][1]]}
                 for name in shown}
    return Result(value=Text(lines, described))
