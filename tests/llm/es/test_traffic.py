"""The byte count of llm/es/traffic.py against sizes known without it: a bytes payload and a float32 tensor cost
their length plus a little pickling, a list of small ints a few bytes each; the per-actor means and maximum
against hand sums."""

import pickle

import numpy as np
import pytest
import torch

from escov.llm.es.traffic import Traffic, serialized_bytes

pytest.importorskip("ray")


def test_a_payload_costs_its_bytes_and_a_little_pickling():
    blob = bytes(range(256)) * 4000  # 1,024,000 bytes
    assert 1_024_000 <= serialized_bytes(blob) <= 1_024_000 + 64
    assert serialized_bytes(blob) == len(pickle.dumps(blob, protocol=5))  # in-band, as plain pickle writes it
    tensor = torch.zeros(50_000)  # 200,000 bytes of float32
    assert 200_000 <= serialized_bytes({"w": tensor}) <= 200_000 + 2_000
    assert serialized_bytes(list(range(100))) < 300  # positions in the pool: a few bytes each
    array = np.zeros(50_000, np.float32)  # numpy hands its 200,000 bytes out of band at protocol 5
    assert 200_000 <= serialized_bytes(array) <= 200_000 + 2_000


def test_means_over_the_actors_that_took_part():
    traffic = Traffic()
    assert traffic.take() == {}
    traffic.sent(0, 500)
    traffic.received(0, 200)
    traffic.sent(1, 100)  # actor 1 died before answering
    traffic.sent(0, 300)  # and actor 0 ran its members again
    traffic.received(0, 100)
    assert traffic.take() == {
        "actor_bytes": (1100 + 100) / 2,
        "actor_bytes_to": (800 + 100) / 2,
        "actor_bytes_from": 300 / 2,
        "actor_bytes_max": 1100.0,
    }
    assert traffic.take() == {}  # reset
