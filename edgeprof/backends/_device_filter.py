"""Denying a cgroup v2 group some device files: a ``BPF_PROG_TYPE_CGROUP_DEVICE`` program.

cgroup v2 has no ``devices.deny``: the kernel asks the BPF programs attached to a group (and
to its ancestors: each must allow) whether a process may open or create a device file.
:func:`program` writes the few instructions that deny the given rules and allow the rest; it
is pure, and a unit test runs it through an interpreter of those instructions.
:func:`deny_devices` loads it and attaches it to the run's group before any process joins;
the group holds the program until it is removed, so nothing is left to close.

Written by hand, as runc and systemd write theirs: the program is a dozen instructions, and
the bindings that would build it (libbpf, bcc) are C libraries this host need not have.  The
two system calls go through libc's ``syscall`` with the ``bpf_attr`` layout of
``include/uapi/linux/bpf.h``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from collections.abc import Sequence
from pathlib import Path

BPF_PROG_LOAD = 5
BPF_PROG_ATTACH = 8
BPF_PROG_TYPE_CGROUP_DEVICE = 15
BPF_CGROUP_DEVICE = 6
BPF_F_ALLOW_MULTI = 2
"""Beside the programs of the groups above (systemd's, a container runtime's): all must
allow, which is what a run under them needs."""

DEV_TYPES = {"b": 1, "c": 2}
"""``BPF_DEVCG_DEV_BLOCK``, ``BPF_DEVCG_DEV_CHAR``: the low 16 bits of ``access_type``."""

SYSCALL_BPF = {"x86_64": 321, "aarch64": 280}

# The instructions used (include/uapi/linux/bpf.h): opcode = class | size/op | source.
LDX_W = 0x61  # BPF_LDX | BPF_MEM | BPF_W: dst = *(u32 *)(src + off)
AND32_K = 0x54  # BPF_ALU | BPF_AND | BPF_K: dst = (u32)dst & imm
JNE_K = 0x55  # BPF_JMP | BPF_JNE | BPF_K: if dst != imm: pc += off
MOV64_K = 0xB7  # BPF_ALU64 | BPF_MOV | BPF_K: dst = imm
EXIT = 0x95  # BPF_JMP | BPF_EXIT: return r0


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def parse_rule(rule: str) -> tuple[int, int, int | None]:
    """``c 195:1`` → (2, 195, 1); ``c 195:*`` → (2, 195, None)."""
    kind, _, numbers = rule.partition(" ")
    major, _, minor = numbers.partition(":")
    if kind not in DEV_TYPES or not major.isdigit() or not (minor == "*" or minor.isdigit()):
        raise ValueError(f"not a device rule: {rule!r} (expected e.g. 'c 195:1' or 'c 195:*')")
    return DEV_TYPES[kind], int(major), None if minor == "*" else int(minor)


def program(rules: Sequence[str]) -> bytes:
    """The program: 0 (deny) for a device the rules name, 1 (allow) for any other.

    The context is ``struct bpf_cgroup_dev_ctx {u32 access_type; u32 major; u32 minor}``:
    r2 = the device's type, r3 its major, r4 its minor; each rule is a run of tests that
    jumps past its ``return 0`` at the first field that differs."""
    code = [
        _insn(LDX_W, dst=2, src=1, off=0),
        _insn(AND32_K, dst=2, imm=0xFFFF),
        _insn(LDX_W, dst=3, src=1, off=4),
        _insn(LDX_W, dst=4, src=1, off=8),
    ]
    for rule in rules:
        kind, major, minor = parse_rule(rule)
        tests = [(2, kind), (3, major)] + ([] if minor is None else [(4, minor)])
        for i, (reg, value) in enumerate(tests):
            code.append(_insn(JNE_K, dst=reg, off=len(tests) - i + 1, imm=value))
        code += [_insn(MOV64_K, dst=0, imm=0), _insn(EXIT)]
    code += [_insn(MOV64_K, dst=0, imm=1), _insn(EXIT)]
    return b"".join(code)


def _bpf(cmd: int, attr: ctypes.Array[ctypes.c_char]) -> int:
    number = SYSCALL_BPF.get(platform.machine())
    if number is None:
        raise OSError(0, f"no bpf system call number known for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    ret = int(libc.syscall(number, cmd, attr, len(attr)))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def deny_devices(group: Path, rules: Sequence[str]) -> None:
    """Attach the program of ``rules`` to ``group`` (a cgroup v2 directory).  Raises
    :class:`OSError` where the kernel refuses (no ``CONFIG_CGROUP_BPF``, not privileged: it
    needs ``CAP_BPF`` or ``CAP_SYS_ADMIN``)."""
    code = program(rules)
    insns = ctypes.create_string_buffer(code, len(code))
    license_ = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(128)  # zeroed; the kernel wants the rest zero
    struct.pack_into(
        "<IIQQ", attr, 0, BPF_PROG_TYPE_CGROUP_DEVICE, len(code) // 8,
        ctypes.addressof(insns), ctypes.addressof(license_),
    )  # fmt: skip
    struct.pack_into("<I", attr, 68, BPF_CGROUP_DEVICE)  # expected_attach_type
    prog = _bpf(BPF_PROG_LOAD, attr)
    try:
        group_fd = os.open(group, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            attach = ctypes.create_string_buffer(128)
            struct.pack_into("<IIII", attach, 0, group_fd, prog, BPF_CGROUP_DEVICE,
                             BPF_F_ALLOW_MULTI)  # fmt: skip
            _bpf(BPF_PROG_ATTACH, attach)
        finally:
            os.close(group_fd)
    finally:
        os.close(prog)  # the group holds the program now (or nothing does: it is freed)
