"""The command bar: every shell command, with the shell's own completion (Tab), run in a
worker (Esc cancels), its output shown in the detail pane."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input
from textual.worker import get_current_worker

from ..commands.base import CommandError
from .plain import run_lines
from .sqlrun import Cancelled, SqlRun, SqlTable, wants_table
from .tabular import command_table

if TYPE_CHECKING:
    from .engine import Engine


class ShellSuggester(Suggester):
    """The first completion, shown greyed after the cursor (Right or Tab takes it)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.engine = engine

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        found = self.engine.completions(value)
        return found[0] if found else None


class CommandBar(Input):
    """``:`` opens it; Enter runs; Tab completes; Up/Down recall; Esc cancels or closes."""

    DEFAULT_CSS = """
    CommandBar { dock: bottom; margin-bottom: 1; display: none; border: tall $accent; }
    CommandBar.open { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "complete", "Complete", priority=True),
        Binding("escape", "close", "Cancel/close"),
        Binding("up", "recall(-1)", "Previous", show=False),
        Binding("down", "recall(1)", "Next", show=False),
    ]

    @dataclass
    class Ran(Message):
        line: str
        lines: list[str]
        errors: list[str]
        finished: bool
        table: SqlTable | None = None  # the result is a table (topics, brokers...)

    @dataclass
    class Started(Message):
        """A command (not sql) went to its worker: the pane shows it running."""
        line: str

    class Closed(Message):
        """Esc closed the bar: the screen moves the focus (to a table on show, or on)."""

    @dataclass
    class SqlStarted(Message):
        line: str
        run: SqlRun

    @dataclass
    class SqlDone(Message):
        line: str
        table: SqlTable | None
        error: str | None
        cancelled: bool
        seconds: float

    def __init__(self, engine: Engine) -> None:
        super().__init__(placeholder="command (help lists them; Tab completes; Esc closes)",
                         id="command", suggester=ShellSuggester(engine))
        self.engine = engine
        self.disabled = True
        self.history: list[str] = []
        self._recall = 0
        self.running = False
        self.sql: SqlRun | None = None

    def open(self) -> None:
        self.disabled = False
        self.add_class("open")
        self.screen.set_focus(self)  # now, not queued after the keys typed next

    def action_close(self) -> None:
        if self.running:
            if self.sql is not None:
                # The bar is free at once; Spark kills the query's tasks in the background
                # and the worker's late answer is dropped.
                run, self.sql = self.sql, None
                run.cancel()
                self.running = False
                self.post_message(self.SqlDone(run.line, None, None, True, run.seconds()))
                return
            self.workers.cancel_group(self, "command")
            self.running = False
            self.notify("command cancelled", severity="warning")
            return
        self.remove_class("open")
        self.disabled = True
        self.post_message(self.Closed())

    def action_complete(self) -> None:
        found = self.engine.completions(self.value)
        if not found:
            self.app.bell()
            return
        common = found[0]
        for f in found[1:]:
            while not f.startswith(common):
                common = common[:-1]
        if len(common) > len(self.value):
            self.value = common
            self.cursor_position = len(common)
        if len(found) > 1:
            shown = [f[len(self.value) - len(self.value.split(" ")[-1]):] for f in found[:40]]
            more = f" (+{len(found) - 40})" if len(found) > 40 else ""
            self.notify("  ".join(s.strip() for s in shown) + more, title="completions",
                        timeout=4)

    def action_recall(self, step: int) -> None:
        if not self.history:
            return
        self._recall = max(0, min(len(self.history), self._recall + step))
        self.value = self.history[self._recall] if self._recall < len(self.history) else ""
        self.cursor_position = len(self.value)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        line = event.value.strip()
        if not line:
            return
        if line in ("exit", "quit"):
            self.app.exit(return_code=0)
            return
        self.history.append(line)
        self._recall = len(self.history)
        self.value = ""
        self.running = True
        try:
            words = shlex.split(line)
        except ValueError:
            words = []
        if wants_table(words):
            self.sql = SqlRun(self.engine, " ".join(words[1:]), line)
            self.post_message(self.SqlStarted(line, self.sql))
            self.run_sql(line, self.sql)
        else:
            self.post_message(self.Started(line))
            self.run_command(line)

    @work(thread=True, exclusive=True, group="command")
    def run_sql(self, line: str, run: SqlRun) -> None:
        table, error = None, None
        try:
            table = run.run()
        except Cancelled:
            pass
        except CommandError as e:
            error = f"sql: {e}"
        except Exception as e:  # one line on screen, never a traceback
            error = f"sql: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e) else ''}"
        self.app.call_from_thread(self._sql_done, run, self.SqlDone(
            line, table, error, run.cancelled, run.seconds()))

    def _sql_done(self, run: SqlRun, message: SqlDone) -> None:
        if run is not self.sql:
            return  # cancelled: already reported
        self.running = False
        self.sql = None
        self.post_message(message)

    @work(thread=True, exclusive=True, group="command")
    def run_command(self, line: str) -> None:
        worker = get_current_worker()
        result = self.engine.run(line)
        lines, finished = run_lines(result, lambda: worker.is_cancelled)
        errors = list(result.errors) + [f"warning: {w}" for w in result.warnings]
        table = command_table(result.value) if finished else None
        self.app.call_from_thread(self._done, self.Ran(line, lines, errors, finished, table))

    def _done(self, message: Ran) -> None:
        self.running = False
        self.post_message(message)
