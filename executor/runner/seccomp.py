"""The runner's seccomp filter: system calls the snippet may not make.

Installed by the runner right after warm-up (``--seccomp``), before it says "ready", for every
thread at once (SECCOMP_FILTER_FLAG_TSYNC: XLA has started its thread pools by then). Children
the snippet forks inherit it, and it cannot be removed.

It is the second wall, behind bubblewrap's namespaces: it shrinks the kernel surface a snippet
can reach (namespaces, mounts, io_uring, bpf, keyrings, perf, ptrace) and keeps the network
closed even if a namespace were misconfigured.

- ``socket``/``socketpair``: AF_UNIX only, anything else fails with EPERM. AF_UNIX stays:
  Python's asyncio and multiprocessing use socketpair(), and it reaches nothing outside: the
  sandbox binds no host socket path, and abstract sockets belong to the network namespace,
  which bubblewrap made new and empty.
- ``clone`` with any CLONE_NEW* flag: EPERM. ``clone3`` passes its flags in memory that a
  filter cannot read, so it fails with ENOSYS, which makes glibc fall back to ``clone``.
- the calls in ``DENIED``: EPERM.
- a call from another ABI (i386 ``int 0x80``, x32) kills the process: its numbers differ and
  would slip past the table.

Hand-written classic BPF rather than libseccomp through ctypes: no library to bind into the
sandbox or to find at run time, and the whole policy reads on one page. The syscall numbers
are checked against libseccomp's tables by tests/sandbox/test_seccomp.py.

Only the standard library: the runner is bound into the sandbox alone.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import platform
import struct

# <linux/audit.h>
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

# <linux/seccomp.h>
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_NO_NEW_PRIVS = 38

AF_UNIX = 1
CLONE_NEW_FLAGS = (
    0x00000080  # CLONE_NEWTIME
    | 0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

# Syscall numbers: x86_64 from <asm/unistd_64.h>, aarch64 from <asm-generic/unistd.h>.
# None: the call does not exist on that architecture.
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    # name: (x86_64, aarch64)
    "socket": (41, 198),
    "socketpair": (53, 199),
    "clone": (56, 220),
    "clone3": (435, 435),
    "seccomp": (317, 277),
    # namespaces
    "unshare": (272, 97),
    "setns": (308, 268),
    # mounts
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    # other processes' memory
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "process_madvise": (440, 440),
    "pidfd_getfd": (438, 438),
    "kcmp": (312, 272),
    # kernel attack surface no snippet needs
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "fanotify_init": (300, 262),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "lookup_dcookie": (212, 18),
    # the machine itself (all need capabilities the sandbox lacks; denied before the check)
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "acct": (163, 89),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "syslog": (103, 116),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "vhangup": (153, 58),
    "iopl": (172, None),
    "ioperm": (173, None),
    "modify_ldt": (154, None),
    "uselib": (134, None),
}

SPECIAL = ("socket", "socketpair", "clone", "clone3", "seccomp")
DENIED = tuple(name for name in SYSCALLS if name not in SPECIAL)

ARCHES = {
    # platform.machine(): (index into SYSCALLS values, AUDIT_ARCH_*)
    "x86_64": (0, AUDIT_ARCH_X86_64),
    "aarch64": (1, AUDIT_ARCH_AARCH64),
    "arm64": (1, AUDIT_ARCH_AARCH64),
}

# Classic BPF opcodes (<linux/bpf_common.h>)
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06

# Offsets in struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6];}. Both architectures
# are little-endian, so an argument's low 32 bits (an int: family, flags) sit at its offset.
OFF_NR = 0
OFF_ARCH = 4
OFF_ARG0 = 16


class SeccompError(RuntimeError):
    pass


def syscall_number(name: str, machine: str | None = None) -> int | None:
    index, _ = ARCHES[machine or platform.machine()]
    return SYSCALLS[name][index]


# What the template (runner/template.py) may still call: it makes each forked runner's
# namespaces and mounts. Its children install the full filter on top (filters stack).
TEMPLATE_ALLOWS = ("unshare", "setns", "mount", "umount2")


def build_filter(machine: str | None = None, allow: tuple[str, ...] = ()) -> list[tuple[int, int, int, int]]:
    """The filter program: a list of (code, jt, jf, k) instructions. ``allow``: calls of
    ``DENIED`` to let through (the template's)."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise SeccompError(f"no seccomp syscall table for {machine}")
    index, audit_arch = ARCHES[machine]

    def nr(name):
        return SYSCALLS[name][index]

    # Assembled with symbolic jump targets, resolved below; classic BPF jumps forward only.
    prog: list = []
    labels: dict[str, int] = {}

    def emit(code, k=0, jt=None, jf=None):
        prog.append([code, jt, jf, k])

    def label(name):
        labels[name] = len(prog)

    emit(BPF_LD_W_ABS, OFF_ARCH)
    emit(BPF_JEQ_K, audit_arch, jf="kill")
    emit(BPF_LD_W_ABS, OFF_NR)
    if machine == "x86_64":
        emit(BPF_JGE_K, X32_SYSCALL_BIT, jt="kill")
    for name in DENIED:
        if nr(name) is not None and name not in allow:
            emit(BPF_JEQ_K, nr(name), jt="eperm")
    emit(BPF_JEQ_K, nr("socket"), jt="socket")
    emit(BPF_JEQ_K, nr("socketpair"), jt="socket")
    emit(BPF_JEQ_K, nr("clone"), jt="clone")
    emit(BPF_JEQ_K, nr("clone3"), jt="enosys")
    emit(BPF_RET_K, SECCOMP_RET_ALLOW)
    label("socket")
    emit(BPF_LD_W_ABS, OFF_ARG0)
    emit(BPF_JEQ_K, AF_UNIX, jt="allow", jf="eperm")
    label("clone")
    emit(BPF_LD_W_ABS, OFF_ARG0)
    emit(BPF_JSET_K, CLONE_NEW_FLAGS, jt="eperm", jf="allow")
    label("allow")
    emit(BPF_RET_K, SECCOMP_RET_ALLOW)
    label("eperm")
    emit(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM)
    label("enosys")
    emit(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS)
    label("kill")
    emit(BPF_RET_K, SECCOMP_RET_KILL_PROCESS)

    out = []
    for pc, (code, jt, jf, k) in enumerate(prog):
        offsets = []
        for target in (jt, jf):
            if target is None:
                offsets.append(0)
                continue
            offset = labels[target] - pc - 1
            if not 0 <= offset <= 255:
                raise SeccompError(f"jump to {target} out of range at {pc}")
            offsets.append(offset)
        out.append((code, offsets[0], offsets[1], k))
    return out


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@functools.lru_cache(maxsize=4)
def _program(machine: str, allow: tuple[str, ...]) -> tuple[bytes, int, int]:
    """The filter as the kernel reads it (its instructions packed), how many, and the seccomp
    call's number: built once a process; the runner template builds its runners' before it forks
    them (``prepare``), so that each runner only installs it."""
    program = build_filter(machine, allow)
    return b"".join(struct.pack("=HBBI", *insn) for insn in program), len(program), syscall_number("seccomp", machine)


@functools.lru_cache(maxsize=1)
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def prepare(allow: tuple[str, ...] = ()) -> None:
    """Build now what ``install(allow=allow)`` installs: in a process that forks the installers."""
    _program(platform.machine(), tuple(allow))
    _libc()


def install(machine: str | None = None, allow: tuple[str, ...] = ()) -> None:
    """Install the filter on every thread of this process. Raises SeccompError on failure: a
    runner that cannot confine itself must not run a snippet."""
    raw, count, seccomp_nr = _program(machine or platform.machine(), tuple(allow))
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(count, ctypes.cast(buf, ctypes.c_void_p))
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SeccompError(f"prctl(NO_NEW_PRIVS): {ctypes.get_errno()}")
    result = libc.syscall(
        ctypes.c_long(seccomp_nr),
        ctypes.c_long(SECCOMP_SET_MODE_FILTER),
        ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(fprog),
    )
    if result != 0:
        # > 0: the id of a thread that could not be synchronised; < 0: errno.
        raise SeccompError(f"seccomp(SET_MODE_FILTER, TSYNC) failed: {result}, errno {ctypes.get_errno()}")
