"""Regenerate the committed Python stubs from ``cuzk.proto``:

    python -m cuzk_plugin.server.proto.generate

Runs grpc_tools.protoc from the repository root so the stubs import each other by their
package path (``cuzk_plugin.server.proto.cuzk_pb2``).
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO = Path(__file__).with_name("cuzk.proto")
ROOT = Path(__file__).resolve().parents[3]


def main() -> int:
    from grpc_tools import protoc  # dev extra: grpcio-tools

    rel = PROTO.resolve().relative_to(ROOT)
    args = ["protoc", f"-I{ROOT}", f"--python_out={ROOT}", f"--pyi_out={ROOT}", f"--grpc_python_out={ROOT}", str(rel)]
    code = protoc.main(args)
    if code == 0:
        print(f"generated stubs for {rel} in {PROTO.parent}")
    return code


if __name__ == "__main__":
    sys.exit(main())
