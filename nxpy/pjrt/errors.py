"""What the runtime raises: :class:`CompileError` (XLA rejected a module),
:class:`BufferDeletedError` (a donated buffer used again), and how the failure of a
runtime call becomes the exception a caller sees (:func:`raise_runtime_failure`: a host
callback's own error, a lost process, a failure of the collectives' transport)."""
from __future__ import annotations

import contextlib
import itertools
import re

from .. import telemetry
from . import lib
from .client import process_index
from .distributed import DistributedError, ProcessLostError, _first_line


class CompileError(RuntimeError):
    """XLA rejected a module nxpy emitted (a bug in nxpy or a plugin's lowering)."""


class BufferDeletedError(RuntimeError):
    """A device buffer was used after a compiled function took its memory (donation)
    through another tensor that shares it."""


#: what a runtime error says when a collective across processes failed on its transport
_TRANSPORT = re.compile(r"gloo|nccl|connection|peer|socket", re.I)


#: what host callbacks raised, by the number their failure's text carries, until the
#: failure reaches the caller (bounded: a sharded run may fail on every device)
_CALLBACK_ERRORS: dict = {}
_callback_error_numbers = itertools.count()
_CALLBACK_ERROR = re.compile(r"nxpy host callback error (\d+):")


def _raise_runtime_failure(e, what):
    """Called while handling ``e``, the failure of a runtime call (``what``): raises the
    exception a host callback raised when that failed the run (a user's ``hook`` or
    ``runtime_call`` function: the user's own error, not XLA's text); in a distributed
    program, :class:`ProcessLostError` when a process was lost (a collective's failure
    comes a moment before the watch hears of it: it waits a few seconds for it) or a
    :class:`DistributedError` for another failure of the collectives' transport; else
    re-raises ``e``."""
    m = _CALLBACK_ERROR.search(str(e))
    if m is not None:
        raised = _CALLBACK_ERRORS.pop(int(m.group(1)), None)
        if raised is not None:
            raise raised from None
    if "has been deleted" in str(e):
        raise BufferDeletedError(
            f"{what} needs a device buffer whose memory was given to a compiled function "
            f"(donated) through another tensor sharing it: a tensor resharded from this one "
            f"(nx.device_put reuses the blocks that stay on their devices), or one of its "
            f"addressable_shards. Copy before donating (nx.device_put(t, "
            f"t.sharding, ...) of a copy, or jit without donate_argnums)") from None
    w = lib._state.get("watch")
    if w is None or isinstance(e, DistributedError):
        raise  # e, the exception being handled
    transport = bool(_TRANSPORT.search(str(e)))
    if w.wait_lost(5.0 if transport else 0.0):
        raise ProcessLostError() from None
    if transport:
        raise DistributedError(
            f"process {process_index()}: {what} failed in the collectives between "
            f"processes ({_first_line(e)}), and no process is known to be lost: check the "
            f"network between the hosts and the other processes' output") from None
    raise


raise_runtime_failure = _raise_runtime_failure  # for the callers' own hot paths


@contextlib.contextmanager
def _compiling(module_text):
    """Times an XLA compile of ``module_text`` and reports XLA's failure as
    :class:`CompileError` with the module (a :class:`ProcessLostError` the watch raises
    in this thread meanwhile is not XLA's: it goes through)."""
    try:
        with telemetry.timed("compile", key=hash(module_text)):
            yield
    except ProcessLostError:
        raise
    except Exception as e:  # XLA's own error text, with the module
        raise CompileError(f"XLA could not compile the module nxpy emitted: {e}\n\n"
                           f"{module_text}") from None

