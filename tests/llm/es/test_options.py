"""The Ray checks that need the machine (llm/es/options.py): a cluster address is "host:port", "ray://host:port" or
"auto" (a malformed one refused by its form, before any connection), and a well-formed one must accept a TCP
connection (a listening socket opened here, and the same port once closed)."""

import socket

import pytest

from escov.llm.es.options import check_address


@pytest.mark.parametrize("address", ["", "auto"])
def test_a_local_or_automatic_address_needs_no_connection(address):
    check_address(address)


@pytest.mark.parametrize("address", ["localhost", "localhost:port", ":6379", "ray://:10001", "127.0.0.1:"])
def test_an_address_without_a_host_or_a_numeric_port_is_refused_by_its_form(address):
    with pytest.raises(ValueError) as err:
        check_address(address, timeout_s=0.5)
    assert str(err.value) == f"ray address must be 'host:port', 'ray://host:port' or 'auto', got {address!r}"


def test_a_well_formed_address_must_accept_a_connection():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        check_address(f"127.0.0.1:{port}", timeout_s=2.0)
        check_address(f"ray://127.0.0.1:{port}", timeout_s=2.0)
    with pytest.raises(ValueError, match=rf"^ray address '127.0.0.1:{port}': no Ray cluster reachable \("):
        check_address(f"127.0.0.1:{port}", timeout_s=2.0)
