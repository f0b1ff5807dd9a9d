"""MessageReader: whole messages however the bytes arrive (one read per message, several messages
in one read, a message over many reads, EOF, impossible lengths), and the one-section OP_MSG
shortcut of parse_op_msg."""

import socket
import struct
import threading

import bson
import pytest

from devmongo.server import BadLength, MessageReader, parse_op_msg


def op_msg(request_id, doc, flags=0):
    body = struct.pack("<I", flags) + b"\x00" + bson.encode(doc)
    return struct.pack("<iiii", 16 + len(body), request_id, 0, 2013) + body


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_messages_arriving_together_and_in_pieces(pair):
    a, b = pair
    big = {"ping": 1, "blob": "x" * 300_000}
    data = op_msg(1, {"ping": 1}) + op_msg(2, {"find": "c"}) + op_msg(3, big)

    def send():
        a.sendall(data[:10])
        for i in range(10, len(data), 7000):
            a.sendall(data[i : i + 7000])
        a.close()

    t = threading.Thread(target=send)
    t.start()
    reader = MessageReader(b)
    got = []
    while (message := reader.next_message()) is not None:
        length, request_id, opcode, body = message
        assert length == len(body) + 16 and opcode == 2013
        got.append((request_id, parse_op_msg(body)[1]))
    t.join()
    assert got == [(1, {"ping": 1}), (2, {"find": "c"}), (3, big)]


def test_eof_in_the_middle_of_a_message(pair):
    a, b = pair
    a.sendall(op_msg(1, {"ping": 1})[:20])
    a.close()
    assert MessageReader(b).next_message() is None


def test_impossible_length(pair):
    a, b = pair
    a.sendall(struct.pack("<iiii", 8, 1, 0, 2013))
    with pytest.raises(BadLength):
        MessageReader(b).next_message()


def test_parse_op_msg_with_document_sequences_and_checksum():
    seq_docs = [{"_id": 1}, {"_id": 2}]
    seq = b"documents\x00" + b"".join(bson.encode(d) for d in seq_docs)
    body = (
        struct.pack("<I", 0)
        + b"\x00"
        + bson.encode({"insert": "c", "$db": "d"})
        + b"\x01"
        + struct.pack("<i", 4 + len(seq))
        + seq
    )
    assert parse_op_msg(body) == (0, {"insert": "c", "$db": "d", "documents": seq_docs})
    one = struct.pack("<I", 1) + b"\x00" + bson.encode({"ping": 1}) + b"\x00\x00\x00\x00"
    assert parse_op_msg(one) == (1, {"ping": 1})
    with pytest.raises(ValueError):
        parse_op_msg(struct.pack("<I", 0))
