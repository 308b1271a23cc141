"""The cuzk.v1 proto and its generated stubs (``cuzk_pb2``, ``cuzk_pb2_grpc``)."""
