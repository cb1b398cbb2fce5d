"""The bytes that cross between the ES driver and each Ray actor, counted per iteration.

What is counted is each call's payload as Ray serializes it: the call's arguments on the way to the actor and
its return value on the way back, pickled with Ray's own cloudpickle at protocol 5 (what Ray's serializer
does with them; a buffer handed out of band, such as a tensor's storage, counts with its full size). The
weights an actor starts from count once per actor (it pulls them from the object store: over the network when
it lives on another node), with the actor's other constructor arguments, in the first iteration's figure. Not
counted: Ray's own envelope of a call (task and actor ids, the function's name, the reply's framing), a fixed
few hundred bytes per call whatever the model or the population, and Ray's heartbeats between nodes.

    actor_bytes        mean over the iteration's actors of (bytes to the actor + bytes from it)
    actor_bytes_to     mean bytes sent to one actor (arguments)
    actor_bytes_from   mean bytes returned by one actor (results)
    actor_bytes_max    the largest (to + from) of one actor (a re-run block makes one actor's share larger)

The iteration's actors are those it sent anything to (a dead actor's share counts up to its death).
"""

from __future__ import annotations

from collections import defaultdict


class _Counter:
    """A write-only file that only counts what is written to it."""

    def __init__(self):
        self.n = 0

    def write(self, data) -> int:
        size = memoryview(data).nbytes
        self.n += size
        return size


def serialized_bytes(obj) -> int:
    """Size of obj pickled as Ray pickles a call's arguments and results (cloudpickle, protocol 5), in-band bytes
    plus out-of-band buffers, counted while streaming (no copy of the whole payload is held)."""
    from ray import cloudpickle

    counter, buffers = _Counter(), []
    cloudpickle.CloudPickler(counter, protocol=5, buffer_callback=buffers.append).dump(obj)
    return counter.n + sum(b.raw().nbytes for b in buffers)


class Traffic:
    """Bytes to and from each actor since the last `take`."""

    def __init__(self):
        self.to: dict[int, int] = defaultdict(int)
        self.back: dict[int, int] = defaultdict(int)

    def sent(self, worker: int, nbytes: int) -> None:
        self.to[worker] += nbytes

    def received(self, worker: int, nbytes: int) -> None:
        self.back[worker] += nbytes

    def take(self) -> dict[str, float]:
        """The metrics of the module docstring for the traffic since the last call ({} when nothing crossed); resets."""
        workers = sorted(set(self.to) | set(self.back))
        if not workers:
            return {}
        totals = [self.to[w] + self.back[w] for w in workers]
        k = len(workers)
        out = {
            "actor_bytes": sum(totals) / k,
            "actor_bytes_to": sum(self.to[w] for w in workers) / k,
            "actor_bytes_from": sum(self.back[w] for w in workers) / k,
            "actor_bytes_max": float(max(totals)),
        }
        self.to.clear()
        self.back.clear()
        return out
