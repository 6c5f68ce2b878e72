"""Ctrl-C and SIGTERM during training: stop cleanly, keep the work, say how to resume.

The first SIGINT/SIGTERM asks the loop to stop after the block of steps it is in
(a compiled block cannot be cut, and Python sees the signal only when the block
returns); the loop then checkpoints (finite state only) and the run ends as
`RunInterrupted`, which the command line turns into exit 130 (SIGINT) or 143
(SIGTERM), the codes preemptible cluster jobs expect. A second signal exits at once.
"""
import os
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(KeyboardInterrupt):
    """The run stopped on SIGINT/SIGTERM after saving a checkpoint and result.json.

    A KeyboardInterrupt, so a notebook cell stops as on any Ctrl-C; `result` holds the
    TrainResult (status 'interrupted') and `exit_code` is 128 + the signal number.
    """

    def __init__(self, signum, result, line):
        super().__init__(line)
        self.signum, self.result = signum, result
        self.exit_code = 128 + signum


class StopRequests:
    """A context in which SIGINT/SIGTERM set `signum` instead of stopping the process.

    Handlers can only be installed from the main thread; elsewhere (a run started
    from a thread) signals keep their usual effect.
    """

    def __init__(self):
        self.signum = None
        self.block_end = None  # the step the running block ends at (set by the loop)
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, signum, frame):
        del frame
        if self.signum is not None:  # the second signal: at once, no clean-up
            os._exit(128 + signum)
        self.signum = signum
        # said at once (a block may take minutes), so a second Ctrl-C is a choice
        where = f"step {self.block_end}" if self.block_end is not None else "the next step"
        os.write(2, (f"\n{signal.Signals(signum).name} received: stopping at {where} (the "
                     "end of the running block of steps) to save a checkpoint there; "
                     f"{signal.Signals(signum).name} again exits at once without saving.\n"
                     ).encode())

    def __exit__(self, *exc):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()
        return False
