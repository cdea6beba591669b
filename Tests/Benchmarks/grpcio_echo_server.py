"""A grpcio server for echo.v1.Echo/Get, the Python reference point of grpc-bench.

Usage: grpcio_echo_server.py GENERATED_DIR PORT
"""

import sys
from concurrent import futures

import grpc

sys.path.insert(0, sys.argv[1])
from echo.v1 import echo_pb2, echo_pb2_grpc  # noqa: E402


class Echo(echo_pb2_grpc.EchoServicer):
    def Get(self, request, context):
        return echo_pb2.EchoResponse(text=request.text, payload=request.payload)


server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
server.add_insecure_port(f"127.0.0.1:{sys.argv[2]}")
server.start()
print("ready", flush=True)
server.wait_for_termination()
