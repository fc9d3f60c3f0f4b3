"""Capped capture of a command's output: head and tail kept, the middle dropped and counted.

An agent (or the code under test) may print without end; the engine must not hold it all.
Each stream keeps its first :data:`HEAD_BYTES` and last :data:`TAIL_BYTES`; what falls in
between is dropped as it arrives (memory stays bounded whatever the volume) and the result
says how much was dropped.
"""

from __future__ import annotations

from collections import deque

HEAD_BYTES = 8 << 20
TAIL_BYTES = 8 << 20


class CappedOutput:
    """A byte sink that keeps a bounded head and tail of everything fed to it."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._head_cap = head
        self._tail_cap = tail
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.dropped = 0
        """Bytes dropped from the middle."""

    def feed(self, data: bytes) -> None:
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail.append(bytes(data))
        self._tail_len += len(data)
        while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_cap:
            first = self._tail.popleft()
            self._tail_len -= len(first)
            self.dropped += len(first)
        if self._tail_len > self._tail_cap * 2:  # one huge chunk: keep only its end
            joined = b"".join(self._tail)
            cut = len(joined) - self._tail_cap
            self.dropped += cut
            self._tail = deque([joined[cut:]])
            self._tail_len = self._tail_cap

    def value(self) -> bytes:
        tail = b"".join(self._tail)
        if not self.dropped:
            return bytes(self._head) + tail
        note = f"\n[... evoround dropped {self.dropped} bytes of output here ...]\n".encode()
        return bytes(self._head) + note + tail
