"""The cgroup v2 device filter's program (:mod:`edgeprof.backends._device_filter`), run by a
small interpreter of the eBPF instructions it uses: a device a rule names is denied (0), any
other allowed (1), whatever the access bits.  The kernel's own verdict on a real group is the
VM tier's (``tests/host/test_gpu_run.py`` in the cgroup v2 guest)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.backends._device_filter import (
    AND32_K,
    EXIT,
    JNE_K,
    LDX_W,
    MOV64_K,
    parse_rule,
    program,
)
from tests.unit.fuzz_strategies import fuzz

MASK32 = 0xFFFFFFFF


def run(code: bytes, access_type: int, major: int, minor: int) -> int:
    """Execute ``code`` on ``struct bpf_cgroup_dev_ctx`` (r1 points at it)."""
    ctx = struct.pack("<III", access_type, major, minor)
    regs = [0] * 11
    pc = 0
    for _ in range(10_000):  # a program that loops is a bug, not a hang
        op, regbits, off, imm = struct.unpack_from("<BBhi", code, pc * 8)
        dst, src = regbits & 0xF, regbits >> 4
        pc += 1
        if op == LDX_W:
            assert src == 1 and off in (0, 4, 8), "reads only the context"
            regs[dst] = struct.unpack_from("<I", ctx, off)[0]
        elif op == AND32_K:
            regs[dst] = (regs[dst] & imm) & MASK32
        elif op == JNE_K:
            if regs[dst] != imm & MASK32:
                pc += off
        elif op == MOV64_K:
            regs[dst] = imm
        elif op == EXIT:
            return regs[0]
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
    raise AssertionError("the program did not exit")


CHAR, BLOCK = 2, 1
READ_WRITE = (2 | 4) << 16  # BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE


def test_denies_what_a_rule_names_and_allows_the_rest() -> None:
    code = program(["c 195:1", "c 195:3"])
    assert run(code, READ_WRITE | CHAR, 195, 1) == 0
    assert run(code, READ_WRITE | CHAR, 195, 3) == 0
    assert run(code, READ_WRITE | CHAR, 195, 0) == 1  # the chosen GPU
    assert run(code, READ_WRITE | CHAR, 195, 255) == 1  # nvidiactl
    assert run(code, READ_WRITE | BLOCK, 195, 1) == 1  # a block device of the same numbers
    assert run(code, READ_WRITE | CHAR, 1, 3) == 1  # /dev/null


def test_a_wildcard_denies_every_minor_of_the_major() -> None:
    code = program(["c 195:*"])
    assert [run(code, CHAR, 195, m) for m in (0, 1, 254, 255)] == [0, 0, 0, 0]
    assert run(code, CHAR, 196, 0) == 1


def test_no_rule_allows_everything() -> None:
    assert run(program([]), CHAR, 195, 0) == 1


RULES = st.tuples(st.sampled_from("bc"), st.integers(0, 511), st.none() | st.integers(0, 1023))


@given(
    st.lists(RULES, max_size=6),
    st.sampled_from([BLOCK, CHAR]),
    st.integers(0, 511),
    st.integers(0, 1023),
    st.integers(0, 7),
)  # fmt: skip
@fuzz(200)  # no deadline: one stall on a loaded host had failed an example
def test_the_program_is_the_rules(
    rules: list[tuple[str, int, int | None]], kind: int, major: int, minor: int, access: int
) -> None:
    text = [f"{t} {ma}:{'*' if mi is None else mi}" for t, ma, mi in rules]
    denied = any(
        {"b": BLOCK, "c": CHAR}[t] == kind and ma == major and mi in (None, minor)
        for t, ma, mi in rules
    )
    assert run(program(text), (access << 16) | kind, major, minor) == (0 if denied else 1)


@pytest.mark.parametrize("rule", ["c 195", "x 195:1", "c a:1", "c 195:-1", "c195:1", ""])
def test_a_malformed_rule_is_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="not a device rule"):
        parse_rule(rule)
