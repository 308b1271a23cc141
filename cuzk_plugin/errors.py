"""The project's exception hierarchy: one base, a class per kind of failure."""


class CuzkError(Exception):
    """Base of every error this package raises on purpose.

    Picklable whatever a subclass's ``__init__`` takes: an error raised in a worker process
    crosses back to the daemon (the default pickling calls ``__init__`` with the message alone,
    which fails for ``WitnessMismatch(partition, challenge, ...)`` and breaks the whole pool)."""

    def __reduce__(self):
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(cls: type[CuzkError], args: tuple, state: dict) -> CuzkError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(state)
    return exc


class EncodingError(CuzkError, ValueError):
    """Bytes that do not decode to a valid field element or curve point."""


class ParamsError(CuzkError, ValueError):
    """A `.params` / `.vk` file that is truncated, corrupted or inconsistent."""


class CircuitError(CuzkError, ValueError):
    """A circuit or witness that is malformed or does not satisfy its constraints."""

    #: The index of the violated constraint, where one is known.
    constraint: int | None = None


class BackendError(CuzkError, RuntimeError):
    """A backend failed to run (device missing, kernel build failure, runtime fault)."""


class BackendUnavailable(BackendError):
    """The backend cannot run on this machine (no device, library not built)."""


class DeviceOutOfMemory(BackendError):
    """The device ran out of memory; the engine may retry on another device."""


class TransientBackendError(BackendError):
    """A fault worth retrying (a lost device context, a timeout)."""


class ProveCancelled(CuzkError):
    """A partition stopped by ``Backend.prove_cancel`` before it finished (no result; the
    backend and its key stay usable). Not a BackendError: nothing to retry."""
