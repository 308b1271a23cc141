"""The cuzk.v1 gRPC front of the engine: proto stubs, the service, the status page, start/stop.

Thin by design: it translates messages to engine calls and engine errors to status codes.
"""

from cuzk_plugin.server.app import MAX_MESSAGE_BYTES, RunningServer, start_server

__all__ = ["MAX_MESSAGE_BYTES", "RunningServer", "start_server"]
