"""The ``mdshell`` command line: options, one-shot commands, and the choice of front end.

Exit codes: 0 success, 1 a command or the load failed, 2 usage error. Errors are one line on
stderr in one style, ``mdshell: ...`` (warnings ``mdshell: warning: ...``), here, in the line
shell and in scripts; ``--debug`` shows tracebacks. Options come before the command;
everything after the command name belongs to the command.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__
from .problems import NOTICES, UNFETCHED, Problem, SourceError

if TYPE_CHECKING:
    from .commands.shell import Shell
    from .session import Loaded, Session

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
# One-shot commands that read the images a load keeps for time travel (the others are
# answered without them, so a one-shot load for them keeps none).
TRAVELLING = frozenset({"at", "diff", "changes"})
# What writing to stdout fails with: a full disk or quota, a closed or broken output.
_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EIO,
                 errno.EPIPE}


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (which imports zlib,
    bz2 and lzma: 2 ms of every start): ``COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpLayout(argparse.RawDescriptionHelpFormatter):
    """argparse's own help layout, the description and examples kept line for line; only the
    width is read without shutil (argparse makes a formatter for every ``add_argument``, and
    its own imports shutil to get the width)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **kw: Any) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width, **kw)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        _err(f"{message} (mdshell --help lists the options)")
        raise SystemExit(EXIT_USAGE)

    def format_help(self) -> str:
        """argparse's help with every command, one line each, before the examples (the
        registry is read only when help is shown)."""
        examples = self.epilog
        self.epilog = commands_help() + ("\n\n" + examples if examples else "")
        try:
            return super().format_help()
        finally:
            self.epilog = examples


def commands_help() -> str:
    """The commands section of ``mdshell --help``: each command and its summary, one line
    each when piped (for grep), cut between words at a terminal's width (or ``COLUMNS``)."""
    from .commands.session import listed
    from .commands.textform import command_rows, wrapped

    sized = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    width = terminal_columns() - 2 if sized else None
    head = ("commands (after the options; `mdshell COMMAND --help` or `mdshell help COMMAND` "
            "for one; without a command: the full-screen interface, or --repl):")
    rows = [(c.name, c.summary + (" (interactive only)" if c.shell_only else ""))
            for c in listed()]
    return "\n".join([*wrapped([head], width), *command_rows(rows, width)])


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mdshell",
        formatter_class=_HelpLayout,
        description="Explore the metadata of an Apache Kafka KRaft cluster: a\n"
                    "__cluster_metadata-0 directory, one snapshot or log file, or the live\n"
                    "controller quorum.",
        epilog="examples:\n"
               "  mdshell -d /var/lib/kafka/data ls /image/topics/byName\n"
               "  mdshell -d DIR tree /image/cluster\n"
               "  mdshell -d DIR --at 2025-01-16T04:00Z topics --describe\n"
               "  mdshell -d node1/ -d node2/ -d node3/ nodes\n"
               "  mdshell -s 00000000000000001234-0000000001.checkpoint cat /image/provenance\n"
               "  mdshell -q controller1:9093 --config client.properties health",
    )
    src = p.add_argument_group("source (one of)")
    src.add_argument("-d", "--directory", metavar="DIR", action="append",
                     help="a __cluster_metadata-0 directory, or the log dir that contains it; "
                          "once per node to compare nodes of one cluster (nodes, diff --node)")
    src.add_argument("-s", "--snapshot", metavar="FILE",
                     help="one .checkpoint or .log file (like kafka-metadata-shell --snapshot)")
    src.add_argument("-q", "--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
                     help="the KRaft controller quorum, live (KIP-919)")
    src.add_argument("--node", metavar="ID",
                     help="with several -d: the node whose directory commands read (default: "
                          "the one whose log the quorum follows)")
    src.add_argument("--config", metavar="FILE",
                     help="Kafka client properties for --bootstrap-controller")
    out = p.add_argument_group("output")
    out.add_argument("-o", "--output", choices=["text", "json"], default="text",
                     help="text (Kafka's shell format) or json (default: text)")
    out.add_argument("--show-secrets", action="store_true",
                     help="print SCRAM credentials and password-type configs in clear "
                          "(delegation tokens hold no secret in the log: never hidden)")
    out.add_argument("--layout", choices=["3.7", "4.x"], default="3.7",
                     help="lay /image out as that Kafka's shell does: 3.7 (default) or 4.x "
                          "(ACLs under acls/byId, no zkMigrationState, as Kafka 4.3 prints)")
    beh = p.add_argument_group("behaviour")
    beh.add_argument("--repl", action="store_true",
                     help="the line shell instead of the full-screen interface")
    beh.add_argument("--follow", action="store_true",
                     help="with -d and no command: follow what a running controller appends "
                          "to the directory, as -q follows the quorum (which it always does)")
    beh.add_argument("--at", metavar="OFFSET|TIME",
                     help="start at the image as of this offset or time (ISO 8601, e.g. "
                          "2025-01-16T04:00Z, UTC without a zone: the image just before the "
                          "first record written after it, in log order; see `man at`)")
    beh.add_argument("--strict", action="store_true",
                     help="treat data warnings (CRC mismatch, truncation...) as errors: exit 1")
    beh.add_argument("--spark-master", metavar="URL",
                     help="the Spark master for sql (default: $MDSHELL_SPARK_MASTER, else "
                          "local[*]); spark.* keys of --config are Spark settings")
    beh.add_argument("--spark-remote", metavar="sc://HOST:PORT", type=_spark_remote,
                     help="run sql on this Spark Connect server instead of starting Spark "
                          "here (default: $SPARK_REMOTE, unless --spark-master)")
    beh.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--version", action="version", version=f"mdshell {__version__}")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="a command and its arguments (without one: interactive)")
    return p


def _err(msg: str) -> None:
    print(f"mdshell: {msg}", file=sys.stderr)


def _warn(problems: Sequence[Problem], strict: bool, debug: bool = False) -> None:
    """Each problem one line: an error (``mdshell: ...``) when it makes mdshell exit 1
    (with --strict, a problem that leaves the image unsound; or an image that could not be
    fetched at all), else a warning (``mdshell: warning: ...``): a notice (an empty segment,
    time travel inside a transaction) stays a warning with --strict, as it leaves the exit
    status 0. With ``debug``, a problem said once for many occurrences is followed by each of
    them."""
    for p in problems:
        if p.code == "image":  # where the damage left the image: the verdict says it
            continue
        _say(p.message, (strict and p.code not in NOTICES) or p.code in UNFETCHED)
        if debug and p.each:
            for one in p.each:
                print(f"mdshell:   {one.message}", file=sys.stderr)


def _say(message: str, error: bool) -> None:
    _err(message if error else f"warning: {message}")


def _verdict(session: Session, strict: bool) -> bool:
    """Say once what the problems above mean for the image (nothing when it is sound);
    whether it is sound."""
    verdict = session.verdict()
    if not verdict.sound:
        _say(verdict.words(), strict)
    return verdict.sound


def _endpoints_usage(bootstrap: str) -> str | None:
    """What is wrong with the text of -q, or None (a usage error: nothing was tried)."""
    from .source.quorum.connection import split_endpoint

    parts = [p for p in bootstrap.split(",") if p.strip()]
    if not parts:
        return "-q: give at least one controller HOST:PORT"
    try:
        for part in parts:
            split_endpoint(part)
    except SourceError as e:
        return str(e)
    return None


def _say_node(args: argparse.Namespace, session: Session) -> None:
    """Name the node every command reads when mdshell chose it among several (-d more than
    once, no --node) and the command is not about the nodes (``nodes``, ``diff --node``)."""
    group = session.nodes
    about_nodes = args.command[:1] == ["nodes"] or (
        args.command[:1] == ["diff"] and "--node" in args.command)
    if group is None or group.picked or len(group.nodes) < 2 or about_nodes:
        return
    chosen = group.chosen
    _err(f"note: reading node {chosen.label} ({chosen.path}): the log the quorum follows; "
         "--node ID reads another")


def _follow_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with --follow here, or None: it follows between commands (the TUI, the
    line shell), so not for one command, and a directory (-q follows anyway)."""
    if args.command:
        return ("--follow reads what is appended between commands: give no command (the "
                "full-screen interface or the line shell), or drop --follow")
    if args.snapshot:
        return ("--follow follows a directory (-d) a running controller writes to, not one "
                "file (-s)")
    if args.directory and len(args.directory) > 1:
        return "--follow follows one directory: give one -d (or pick one with --node)"
    return None


def _help_without_source(args: argparse.Namespace) -> int | None:
    """``help``, ``man CMD`` and ``CMD --help`` read only the command registry: answered
    without opening a source (none may be given); None for any other command."""
    from .commands.session import answer_without_source

    result = answer_without_source(args.command, interactive=False)
    if result is None:
        return None
    from .commands.render import emit

    return emit(result, sys.stdout, output=args.output,
                width=terminal_columns() if sys.stdout.isatty() else None)


def _unused_option(args: argparse.Namespace, full_screen: bool) -> str | None:
    """The first option given that would change nothing here, as a usage error (exit 2);
    None when every option applies. The rule (docs/commands.md): an option that the chosen
    source, command or front end would ignore is refused, never dropped in silence; the
    output options (-o, --show-secrets, --layout) apply to every command and to the line
    shell."""
    command = args.command[0] if args.command else None
    if args.repl and command is not None:
        return (f"--repl opens the line shell, and with a command ({command}) mdshell runs it "
                "once instead: drop --repl or the command")
    if args.config and not args.bootstrap_controller and command not in (None, "sql"):
        return (f"--config is for -q (Kafka client properties) and for sql (its spark.* "
                f"keys); {command} with {_source_option(args)} reads neither: drop --config")
    for given, option in ((args.spark_master, "--spark-master"),
                          (args.spark_remote, "--spark-remote")):
        if given and command not in (None, "sql"):
            return f"{option} is for sql; {command} starts no Spark: drop {option}"
    if command == "nodes" and args.at is not None:
        return ("--at picks the image the other commands read; nodes compares every node's "
                "log whole: drop --at (diff --node A --node B --at OFFSET compares two nodes' "
                "images at one offset)")
    diff_nodes = command == "diff" and "--node" in args.command
    if args.node is not None and (command == "nodes" or diff_nodes):
        reads = ("nodes reads every node given" if command == "nodes" else
                 "diff --node names the two nodes it compares")
        return (f"--node picks the node the other commands read; {reads}: drop the --node "
                f"before {command}")
    if args.spark_master and args.spark_remote:
        return ("--spark-master starts Spark on a master, --spark-remote uses a Spark Connect "
                "server: give one of them")
    if full_screen:
        for given, option in ((args.output != "text", "-o json"),
                              (args.layout != "3.7", f"--layout {args.layout}"),
                              (args.strict, "--strict")):
            if given:
                return (f"{option} applies to commands and the line shell; the full-screen "
                        "interface has its own views (and shows the image's verdict in its "
                        "header): give a command or --repl, or drop the option")
    return None


def _source_option(args: argparse.Namespace) -> str:
    return "-d" if args.directory else "-s" if args.snapshot else "-q"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:  # `mdshell -d DIR -- ls`: the options end there
        args.command = args.command[1:]
    if wrong := _misplaced_option(parser, args.command):
        _err(wrong)
        return EXIT_USAGE
    collecting = gc.isenabled()
    try:
        return _main(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly.
        _drop_stdout()
        return EXIT_OK
    except OSError as e:
        if e.errno not in _WRITE_ERRORS or args.debug:
            return _internal(e, args.debug)
        _drop_stdout()  # reading goes through SourceError: this is the output failing
        _err(f"cannot write the output: {e.strerror or e} (a full disk or a closed output?)")
        return EXIT_FAIL
    except Exception as e:  # last resort: one line, never a traceback unless asked
        return _internal(e, args.debug)
    finally:
        if collecting:
            gc.enable()


def _misplaced_option(parser: argparse.ArgumentParser, words: list[str]) -> str | None:
    """An option of mdshell given after the command (``mdshell ls -d DIR``, ``health -o
    json``), said with where it goes; None when there is none. An option the command takes
    itself (``diff --at``) and the value of one of its options are the command's."""
    from .commands.base import REGISTRY

    cmd = REGISTRY.get(words[0]) if words else None
    if cmd is None or "--help" in words:
        return None
    ours = parser._option_string_actions  # argparse has no public name for it
    after_option = False
    for i, word in enumerate(words[1:], 1):
        name = word.split("=", 1)[0]
        if not after_option and name in ours and name not in cmd.options:
            takes = ours[name].nargs != 0 and "=" not in word and i + 1 < len(words)
            moved = words[i:i + 2] if takes else [word]
            rest = words[1:i] + words[i + len(moved):]
            line = " ".join(["mdshell", *moved, "...", cmd.name, *rest])
            return (f"{name} is an option of mdshell, not of {cmd.name}: give it before the "
                    f"command ({line})")
        after_option = word in cmd.values
    return None


def _frozen(loaded: Loaded) -> None:
    """A one-shot command's image, made with the cyclic GC paused, is left out of its later
    passes (and of the one at exit), as the TUI does: they would walk every object of the
    image and find nothing to free. What the command makes afterwards is collected."""
    gc.freeze()
    gc.enable()


def _internal(e: Exception, debug: bool) -> int:
    if debug:
        raise e
    _err(f"internal error: {type(e).__name__}: {e} (rerun with --debug for details, and "
         "please report it)")
    return EXIT_FAIL


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that the final flush at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _main(args: argparse.Namespace) -> int:
    if sys.stderr is None:  # started with stderr closed: errors go nowhere, not into stdout
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the whole run)
    if sys.stdout is None:  # started with stdout closed (`mdshell ... >&-`)
        _err("cannot write the output: standard output is closed")
        return EXIT_FAIL
    if sys.stdin is None and not args.command:  # `mdshell -d DIR <&-` (cron, a service)
        _err("standard input is closed, so there is no command to read: give one after the "
             "options (mdshell -d DIR ls /image)")
        return EXIT_USAGE
    # Names on disk may hold bytes that are not UTF-8: print them back as they are.
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
    directories = args.directory or []
    sources = [x for x in (directories, args.snapshot, args.bootstrap_controller) if x]
    if len(sources) > 1:
        _err("give only one of -d/--directory, -s/--snapshot and -q/--bootstrap-controller")
        return EXIT_USAGE
    if (helped := _help_without_source(args)) is not None:
        return helped
    if not sources:
        _err("no metadata source: give -d DIR (a __cluster_metadata-0 directory or its log "
             "dir), -s FILE (one .checkpoint or .log file) or -q HOST:PORT (the controllers); "
             "mdshell --help lists the options and commands")
        return EXIT_USAGE
    if args.bootstrap_controller and (wrong := _endpoints_usage(args.bootstrap_controller)):
        _err(wrong)
        return EXIT_USAGE
    if args.follow and (wrong := _follow_usage(args)):
        _err(wrong)
        return EXIT_USAGE
    if args.node is not None and not directories:
        _err("--node picks one of the nodes' directories given with -d")
        return EXIT_USAGE
    full_screen = (not args.command and not args.repl and sys.stdin.isatty()
                   and sys.stdout.isatty())
    if wrong := _unused_option(args, full_screen):
        _err(wrong)
        return EXIT_USAGE
    several = len(directories) > 1 or args.node is not None  # nodes of one cluster
    args.directory = directories[0] if directories and not several else None
    if ((args.spark_master or args.spark_remote or (args.config and not args.bootstrap_controller))
            and not _spark_settings(args)):
        return EXIT_FAIL
    if full_screen:
        from .tui import run_tui  # the full-screen interface (textual is imported there)

        return run_tui(args.directory, args.snapshot, show_secrets=args.show_secrets,
                       at=args.at, bootstrap=args.bootstrap_controller, config=args.config,
                       follow=args.follow, nodes=directories if several else None,
                       node=args.node)
    from .commands import Shell
    from .session import Session
    from .tree.node import RenderOptions

    if args.command:
        gc.disable()  # until the load is done: see _frozen
    try:
        if args.bootstrap_controller:
            from .source.live import LiveSource

            session = Session(LiveSource(args.bootstrap_controller, args.config,
                                         eager=args.strict), layout=args.layout)
        else:
            # One command: load when the command needs the image (``changes`` may not),
            # keeping images for time travel only for a command that travels.
            lazy = bool(args.command) and not args.strict and args.at is None
            marks = (not args.command or args.at is not None or args.follow
                     or args.command[0] in TRAVELLING)
            if several:
                session = Session.of_nodes(directories, args.node, eager=args.strict,
                                           layout=args.layout, lazy=lazy, marks=marks)
                _say_node(args, session)
            else:
                session = Session.open(args.directory, args.snapshot, eager=args.strict,
                                       layout=args.layout, lazy=lazy, marks=marks)
    except SourceError as e:
        if args.debug:
            raise
        _err(str(e))
        return EXIT_FAIL
    width = terminal_columns() if sys.stdout.isatty() else None
    shell = Shell(session, opts=RenderOptions(show_secrets=args.show_secrets))

    def said(loaded: Loaded) -> None:
        """What reading found, said when the load runs (at once unless lazy), and what it
        means for the image."""
        _warn(loaded.problems, args.strict, args.debug)
        shell.said.update(p.message for p in loaded.problems)
        if loaded.problems:
            _verdict(session, args.strict)

    if args.command:
        session.when_loaded(_frozen)
    session.when_loaded(said)
    if args.strict and not session.verdict(session.latest).sound:
        return EXIT_FAIL
    if args.at is not None:
        from .commands.timetravel import is_position

        moved = shell.run(["at", args.at])
        for line in moved.errors:  # said of the option the user typed
            _err("--at " + line[4:] if line.startswith("at: ") else line)
        if moved.code:
            return moved.code if is_position(args.at) else EXIT_USAGE
        sound = session.verdict().sound  # unsound: the warnings are why (--strict: errors)
        for w in moved.warnings:  # what only the older data shows
            _say(w, args.strict and not sound)
        shell.said.update(moved.warnings)
        if moved.warnings and not _verdict(session, args.strict) and args.strict:
            return EXIT_FAIL
    if args.command:
        from .session import LoadFailed

        try:
            return run_one(shell, args.command, sys.stdout, args.output, width, args.strict)
        except LoadFailed as e:  # a lazy session's load: the same as a failed open
            if args.debug:
                raise
            _err(str(e))
            return EXIT_FAIL
    source = session.source
    try:
        source.follow()  # live: keep fetching; each command sees the newest committed image
        if args.follow and args.directory:  # each command first reads what Kafka appended
            from .session.appends import Follow

            session.follow = Follow()
        if not sys.stdin.isatty() or not (sys.stdout.isatty() or sys.stderr.isatty()):
            from .repl import run_script

            return run_script(shell, sys.stdin, sys.stdout, output=args.output)
        from .repl import run_repl

        # Output to a file or a pipe (`> out.txt`, `| tee`): the prompt goes to the terminal.
        return run_repl(shell, output=args.output, output_is_terminal=sys.stdout.isatty())
    finally:
        source.close()


def _spark_remote(url: str) -> str:
    """--spark-remote's value: a Spark Connect URL."""
    from .spark.settings import remote_address

    try:
        remote_address(url)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return url


def _spark_settings(args: argparse.Namespace) -> bool:
    """--spark-master and the spark.* keys of --config (nothing starts until `sql` runs);
    False, said in one line, when --config cannot be read."""
    from .source.localfiles import read_properties
    from .spark.settings import configure

    problems: list[Problem] = []
    if args.config and not os.path.isfile(args.config):
        _err(f"--config {args.config}: no such file")
        return False
    props = read_properties(args.config, problems) if args.config else None
    if problems:
        _warn(problems, True)
        return False
    others = configure(args.spark_master, props, args.spark_remote)
    if others:
        _say("--config: only spark.* keys are used without -q/--bootstrap-controller; "
             f"ignored {', '.join(sorted(others))}", False)
    return True


def run_one(shell: Shell, words: list[str], out: TextIO, output: str = "text",
            width: int | None = None, strict: bool = False) -> int:
    """Run one command; with ``strict``, an image that is not sound (damaged or incomplete
    data, also found while the command read it) makes it fail (exit 1)."""
    from .commands.render import emit

    session = shell.session
    result = shell.run(words)
    if not session.is_loaded and not session.spared:
        session.latest  # noqa: B018  (load now: its warnings are due whatever the command)
    code = emit(result, out, output=output, width=width, notes=session.new_notes,
                said=shell.said, warnings_fail=strict)
    if strict and code == EXIT_OK and (result.warnings or (
            session.is_loaded and not session.verdict().sound)):
        return EXIT_FAIL  # the image is not sound, or what the command read warned
    if code == EXIT_OK and session.is_loaded and any(
            p.code in UNFETCHED for p in session.latest.problems):
        return EXIT_FAIL  # said at load, in one line: the image could not be fetched
    return code


if __name__ == "__main__":
    raise SystemExit(main())
