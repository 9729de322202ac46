"""A TCP proxy on 127.0.0.1 that delays every chunk of data by a fixed time in each direction.

For bench/check_cycle.py --delay-ms: production brokers and Redis are not on loopback, and this kernel
has no netem qdisc (`tc qdisc add dev lo root netem` answers "Specified qdisc kind is unknown"), so the
round trip is lengthened in user space instead: a request waits `delay` on its way to the server and its
answer `delay` on the way back (a round trip gains 2 x delay). Order is kept per direction; throughput is
not limited. Runs as its own process (so it takes no interpreter time from the measured one), listens on
127.0.0.1 only and stops by itself after --max-seconds.

    python bench/latency_proxy.py --listen PORT --target PORT --delay-ms 1 [--max-seconds 1800]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy reader to writer, each chunk sent `delay` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def feed() -> None:
        while data := await reader.read(1 << 16):
            queue.put_nowait((loop.time() + delay, data))
        queue.put_nowait((0.0, b""))

    async def send() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(feed(), send())
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve(listen: int, target: int, delay: float, max_seconds: float) -> None:
    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.serve_forever(), max_seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    args = parser.parse_args()
    asyncio.run(serve(args.listen, args.target, args.delay_ms / 1000, args.max_seconds))


if __name__ == "__main__":
    main()
