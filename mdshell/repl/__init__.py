"""The line shell: a prompt-toolkit REPL, and the same loop fed by a script on stdin.

Completion works on the raw line as typed: the words are split like the shell splits them
(``shlex`` rules: quotes, backslash escapes), and a completion replaces the whole word with a
re-quoted version, so names with spaces or glob characters come back as typed-safe text.

prompt_toolkit is imported only inside functions: this module is also used for piped scripts,
and nothing on the one-shot path may load it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .. import __version__
from ..commands.base import REGISTRY, Command
from ..commands.render import emit
from ..commands.session import ExitShell
from ..commands.shell import Shell
from ..image.verdict import LIVE_STALE, TIME_TRAVEL
from ..tree.javafmt import iso_zoned_utc
from ..tree.paths import GlobError, absolute, has_glob, literal, lookup, unescape
from . import history as hist

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.input import Input
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.output import Output

EXIT_WORST = 2  # a script's status: the worst of its lines (2 usage > 1 failure > 0)
MAX_CANDIDATES = 1000  # a directory of a million partitions must not freeze the prompt

ShowError = Callable[[str], None]


# ------------------------------------------------------------------ word splitting


@dataclass(frozen=True)
class Word:
    """The word under the cursor: ``raw`` as typed, ``value`` after unquoting."""

    raw: str = ""
    value: str = ""
    quote: str = ""  # the quote the word opened with (' or "), kept when re-quoting


def split_line(text: str) -> tuple[list[str], Word]:
    """Finished words before the cursor, and the word being typed (tolerates open quotes).

    Same rules as ``shlex.split(posix=True)``, which runs the line: single quotes are
    literal, double quotes allow ``\\"`` and ``\\\\``, a backslash outside quotes escapes
    the next character.
    """
    words: list[str] = []
    value: list[str] = []
    start = -1  # index where the current word starts; -1 between words
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                value.append(c)
        elif quote == '"':
            if c == '"':
                quote = ""
            elif c == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
                i += 1
                value.append(text[i])
            else:
                value.append(c)
        elif c.isspace():
            if start >= 0:
                words.append("".join(value))
                value, start = [], -1
        else:
            if start < 0:
                start = i
            if c in "'\"":
                quote = c
            elif c == "\\":
                if i + 1 < len(text):
                    i += 1
                    value.append(text[i])
            else:
                value.append(c)
        i += 1
    if start < 0:
        return words, Word()
    lead = text[start] if text[start] in "'\"" else ""
    return words, Word(text[start:], "".join(value), lead)


def glob_escape(name: str) -> str:
    """A node name as a literal path component (``*`` in a name must not act as a glob,
    ``/`` must not split it)."""
    return literal(name)


def quote_word(value: str, quote: str, close: bool) -> str:
    """``value`` as shell text, in the user's quoting style; ``close`` ends an open quote."""
    if quote == "'" and "'" not in value:
        return "'" + value + ("'" if close else "")
    if quote == '"':
        body = value.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + body + ('"' if close else "")
    return "".join("\\" + c if c.isspace() or c in "'\"\\" else c for c in value)


# ------------------------------------------------------------------ completion


@dataclass(frozen=True)
class Candidate:
    """One completion: ``text`` replaces the ``-start`` characters before the cursor."""

    text: str
    start: int
    display: str
    meta: str = ""


def complete(shell: Shell, text: str) -> list[Candidate]:
    """Completions for the line typed so far: a command, then options or paths."""
    words, word = split_line(text)
    if not words:
        return _names(word)
    cmd = REGISTRY.get(words[0])
    if cmd is None:
        return []
    if len(words) > 1 and words[-1] in cmd.values:  # the value of an option
        return _values(shell, cmd.values[words[-1]], word)
    if word.value.startswith("-") and not word.quote:
        return [Candidate(o + " ", -len(word.raw), o)
                for o in cmd.options if o.startswith(word.value)]
    return _values(shell, cmd.arg_kind(_position(cmd, words[1:])), word)


def _position(cmd: Command, words: list[str]) -> int:
    """How many positional words come before the cursor (options and their values aside)."""
    n, skip = 0, False
    for w in words:
        if skip:
            skip = False
        elif w in cmd.values:
            skip = True
        elif not w.startswith("-") or w == "-":
            n += 1
    return n


def _values(shell: Shell, kind: str, word: Word) -> list[Candidate]:
    """What completes a word of ``kind`` (see ``Command.args``): only what the command
    accepts, so that a completed word never makes the command fail."""
    if kind in ("path", "dir"):
        return complete_path(shell, word, dirs_only=kind == "dir")
    if kind == "command":
        return _names(word)
    if kind == "topic":
        return _words(word, sorted(shell.session.loaded.image.topics_by_name))
    if kind == "type":
        return _record_types(word)
    if kind.startswith("="):
        return _words(word, kind[1:].split("|"))
    return []


def _words(word: Word, choices: Iterable[str], head: str = "",
           fold: bool = False) -> list[Candidate]:
    """The ``choices`` that start with the word typed (after ``head``; ``fold``: in any
    case), each ending the word."""
    prefix = word.value[len(head):]
    if fold:
        prefix = prefix.lower()
    out = []
    for c in choices:
        if (c.lower() if fold else c).startswith(prefix):
            out.append(Candidate(quote_word(head + c, word.quote, close=True) + " ",
                                 -len(word.raw), c))
            if len(out) >= MAX_CANDIDATES:
                break
    return out


def _record_types(word: Word) -> list[Candidate]:
    """Record type names for ``--type``/``--exclude`` (a comma list: the last one)."""
    from ..wire.control import CONTROL
    from ..wire.records import METADATA

    head = word.value[:word.value.rfind(",") + 1]
    names = sorted(m.name for m in (*METADATA.values(), *CONTROL.values()))
    return _words(word, names, head, fold=True)


def _names(word: Word) -> list[Candidate]:
    """Command names; a completed name gets its space, like a shell."""
    if word.quote:
        return []
    return [Candidate(name + " ", -len(word.raw), name, REGISTRY[name].summary)
            for name in sorted(REGISTRY) if name.startswith(word.value)]


def complete_path(shell: Shell, word: Word, dirs_only: bool = False) -> list[Candidate]:
    """Children of the directory typed so far whose names start with the last component.

    Words with glob syntax are left alone: completing one would change what it matches. A
    ``[`` or ``{`` still open is text being typed (a name such as ``clientId(br[ack])``),
    and names holding ``/`` or glob characters complete escaped.
    """
    try:
        if has_glob(word.value):
            return []
    except GlobError:  # an unterminated [ or { while typing: the name's own characters
        pass
    cut = _last_slash(word.value) + 1
    dir_text, prefix_text = word.value[:cut], word.value[cut:]
    session = shell.session
    where = absolute(session.cwd_pattern, dir_text or ".")
    node = lookup(session.root, [unescape(c) for c in where])
    if node is None or not node.is_dir:
        return []
    prefix = unescape(prefix_text)
    out: list[Candidate] = []
    names = _topic_names_under(shell, where)
    if prefix in (".", ".."):
        out.append(Candidate(quote_word(dir_text + "../", word.quote, False),
                             -len(word.raw), "../"))
    for name in sorted(n for n in node.names() if n.startswith(prefix) and n):
        child = node.child(name)
        if child is None or (dirs_only and not child.is_dir):
            continue
        suffix = "/" if child.is_dir else ""
        value = dir_text + glob_escape(name) + suffix
        # A leaf ends the word (closing quote, then a space); a directory invites more.
        text = quote_word(value, word.quote, close=not child.is_dir) + ("" if suffix else " ")
        out.append(Candidate(text, -len(word.raw), name + suffix, names(name)))
        if len(out) >= MAX_CANDIDATES:
            break
    return out


def _last_slash(text: str) -> int:
    """Where the last ``/`` no ``\\`` escapes is in ``text`` (-1: none)."""
    last, i = -1, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "/":
            last = i
        i += 1
    return last


def _topic_names_under(shell: Shell, comps: list[str]) -> Callable[[str], str]:
    """Beside each id under ``/image/topics/byId``, the topic's name (completion meta)."""
    if [unescape(c) for c in comps] != ["image", "topics", "byId"]:
        return lambda _: ""
    from ..wire.primitives import uuid_from_str

    by_id = shell.session.loaded.image.topics_by_id

    def name(tid: str) -> str:
        try:
            topic = by_id.get(uuid_from_str(tid))
        except ValueError:
            return ""
        return "" if topic is None else topic.name
    return name


def make_completer(shell: Shell) -> Completer:
    """The prompt-toolkit adapter over :func:`complete`."""
    from prompt_toolkit.completion import CompleteEvent, Completer, Completion
    from prompt_toolkit.document import Document

    class ShellCompleter(Completer):
        def get_completions(self, document: Document, complete_event: CompleteEvent,
                            ) -> Iterable[Completion]:
            for c in complete(shell, document.text_before_cursor):
                yield Completion(c.text, c.start, display=c.display, display_meta=c.meta)

    return ShellCompleter()


# ------------------------------------------------------------------ prompt and banner


def _ellipsize(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2:]


def short_source(shell: Shell) -> str:
    """A few characters naming the source: the log dir above ``__cluster_metadata-0``."""
    path = shell.session.source.describe().rstrip("/") or "/"
    name = os.path.basename(path) or path
    if name.startswith("__cluster_metadata"):
        name = os.path.basename(os.path.dirname(path)) or name
    return _ellipsize(name, 24)


def short_path(path: str, limit: int = 40) -> str:
    """The working directory, its tail kept when long (``…/byName/orders``)."""
    if len(path) <= limit:
        return path
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[1:-1]):
        if len(tail) + len(part) + 3 > limit:
            break
        tail = f"{part}/{tail}"
    return _ellipsize("…/" + tail, limit)


def prompt_parts(shell: Shell) -> list[tuple[str, str]]:
    """``mdshell:<source>[@offset][BADGE]:<cwd>> `` as styled parts; ``@offset`` after
    ``at``, and the verdict's badges (DAMAGED, INCOMPLETE, LIVE STALE) while the image is
    not sound or not following."""
    upto = shell.session.loaded.upto
    at = [] if upto is None else [("class:at", f"@{upto}")]
    badges = [("class:warn" if b == LIVE_STALE else "class:fail", f"[{b}]")
              for b in shell.session.verdict().badges if b != TIME_TRAVEL]
    return [("class:app", "mdshell"), ("", ":"), ("class:source", short_source(shell)), *at,
            *badges, ("", ":"), ("class:path", short_path(shell.session.cwd)), ("", "> ")]


def prompt_text(shell: Shell) -> FormattedText:
    from prompt_toolkit.formatted_text import FormattedText

    return FormattedText(prompt_parts(shell))


def display_path(path: str) -> str:
    """A path as short as it can be said: relative below the cwd, ``~`` below home."""
    absolute_path = os.path.abspath(path)
    rel = os.path.relpath(absolute_path)
    if not rel.startswith(".."):
        return rel
    home = os.path.expanduser("~")
    if home not in ("", "/") and absolute_path.startswith(home + os.sep):
        return "~" + absolute_path[len(home):]
    return absolute_path


def banner(shell: Shell) -> str:
    """One line: what was opened, as of which offset, and how to get help."""
    prov = shell.session.loaded.image.provenance
    if prov.offset < 0:
        state = "an empty image (no metadata records)"
    else:
        state = f"image at offset {prov.offset} (epoch {prov.epoch}"
        if prov.time_ms >= 0:
            when = iso_zoned_utc(prov.time_ms)  # any value, unlike datetime
            state += f", {when[:19].replace('T', ' ')} UTC"
        state += ")"
    # As printed at load: where the damage left the image is said by the verdict line.
    warnings = sum(1 for p in shell.session.loaded.problems if p.code != "image")
    if warnings:
        state += f", {warnings} warning{'s' if warnings > 1 else ''} above"
    source = shell.session.source.describe()
    if os.path.exists(source):
        source = display_path(source)
    return f"mdshell {__version__}, {source}: {state}. 'help' lists commands; Ctrl-D exits."


# ------------------------------------------------------------------ running lines


def execute(shell: Shell, line: str, out: TextIO, show_error: ShowError,
            output: str = "text", width: int | None = None, err: TextIO | None = None) -> int:
    """Run one line and print its result; an unexpected exception becomes one error line.
    Warnings go to ``err``, except those already printed at load (``shell.said``)."""
    try:
        result = shell.run_line(line)
        # Errors go through show_error (colour, line numbers); emit prints the output.
        emit(result, out, err, output=output, width=width, notes=shell.session.new_notes,
             show_errors=False, said=shell.said)
    except (ExitShell, KeyboardInterrupt, BrokenPipeError):
        raise  # BrokenPipeError: the reader went away (`| head`); the front end ends quietly
    except Exception as e:
        show_error(f"internal error: {type(e).__name__}: {e}")
        return 1
    for error in result.errors:  # read after the output: lazy commands add errors as they go
        show_error(error)
    return result.code


def run_script(shell: Shell, lines: Iterable[str], out: TextIO, err: TextIO | None = None,
               output: str = "text") -> int:
    """Commands read line by line (stdin not a terminal), errors prefixed ``mdshell: line N:``.

    Output stays as clean as one-shot output. Returns the worst exit code of its lines, as
    a shell user expects of a script: 2 (a usage error) over 1 (a failure) over 0; a line
    interrupted (130) counts as a failure.
    """
    shell.interactive = True
    seen: list[str] = []
    hist.attach(shell, lambda: seen)
    code = 0
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        seen.append(line)
        if line == "quit":
            break

        def show(msg: str, number: int = number) -> None:
            print(f"mdshell: line {number}: {msg}", file=err or sys.stderr)
        try:
            rc = execute(shell, line, out, show, output, err=err)
        except ExitShell:
            break
        code = max(code, rc if rc <= EXIT_WORST else 1)
    return code


def _error_printer(err: TextIO) -> ShowError:
    """``mdshell: MESSAGE`` (the one style of error lines), red on a colour terminal, plain
    text otherwise (pipes, TERM=dumb, NO_COLOR)."""
    plain = (not err.isatty() or os.environ.get("TERM") == "dumb"
             or bool(os.environ.get("NO_COLOR")))
    if plain:
        return lambda msg: print(f"mdshell: {msg}", file=err, flush=True)
    from prompt_toolkit import print_formatted_text
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.output import create_output

    output = create_output(stdout=err)

    def show(msg: str) -> None:
        print_formatted_text(FormattedText([("ansired", f"mdshell: {msg}")]), output=output)
    return show


def _key_bindings() -> KeyBindings:
    """Enter in a Ctrl-R search runs the command found, as in bash and JLine."""
    from prompt_toolkit.filters import is_searching
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.bindings import search

    kb = KeyBindings()
    kb.add("enter", filter=is_searching)(search.accept_search_and_accept_input)
    return kb


def run_repl(shell: Shell, *, history_path: Path | None = None,
             pt_input: Input | None = None, pt_output: Output | None = None,
             out: TextIO | None = None, err: TextIO | None = None,
             output: str = "text", output_is_terminal: bool = True) -> int:
    """The interactive shell; returns 0 when the user leaves (Ctrl-D, ``exit``).

    ``output_is_terminal`` False (stdout a file or a pipe, stdin and stderr the terminal):
    the banner, the prompt and the line editing go to ``err``, and ``out`` gets only the
    commands' output, as a pipe gets it (one name a line)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.shortcuts import CompleteStyle
    from prompt_toolkit.styles import Style

    out = out or sys.stdout
    err = err or sys.stderr
    if pt_output is None and not output_is_terminal:
        from prompt_toolkit.output import create_output

        pt_output = create_output(stdout=err)
    show_error = _error_printer(err)

    def warn(msg: str) -> None:
        show_error(f"warning: {msg}")

    history = hist.open_history(history_path or hist.history_path(), warn)
    hist.attach(shell, history.get_strings)
    session: PromptSession[str] = PromptSession(
        history=history, completer=make_completer(shell), complete_in_thread=True,
        complete_while_typing=False, complete_style=CompleteStyle.MULTI_COLUMN,
        enable_history_search=True, enable_suspend=True, key_bindings=_key_bindings(),
        input=pt_input, output=pt_output,
        style=Style.from_dict({"source": "ansicyan", "at": "ansiyellow bold",
                               "fail": "ansired bold",
                               "warn": "ansiyellow bold", "path": "ansigreen bold"}))
    shell.interactive = True
    print(banner(shell), file=out if output_is_terminal else err, flush=True)
    while True:
        width = session.output.get_size().columns if output_is_terminal else None
        try:
            line = session.prompt(prompt_text(shell))
        except KeyboardInterrupt:  # Ctrl-C: drop the line, new prompt
            continue
        except EOFError:  # Ctrl-D
            return 0
        if line.strip() == "quit":
            return 0
        try:
            execute(shell, line, out, show_error, output, width, err)
        except ExitShell:
            return 0
        except KeyboardInterrupt:  # Ctrl-C while a command prints
            out.write("\n")
            show_error("interrupted")
