"""The runner's seccomp filter, by itself. The filter is installed in a child process of the
test (our own probe code, not hostile code), never in the test process."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import platform
import signal
import subprocess
import sys
import textwrap

import pytest

from executor.runner import seccomp

PROJECT_EXECUTOR = str(seccomp.__file__).rsplit("/executor/", 1)[0]


def _libseccomp():
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        pytest.skip("libseccomp is not installed (apt-get install libseccomp2)")
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name_arch.restype = ctypes.c_int
    return lib


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_its_syscall_numbers_are_libseccomps(machine):
    lib = _libseccomp()
    index, audit_arch = seccomp.ARCHES[machine]
    for name, numbers in seccomp.SYSCALLS.items():
        resolved = lib.seccomp_syscall_resolve_name_arch(audit_arch, name.encode())
        if numbers[index] is None:
            assert resolved < 0, f"{name} exists on {machine}: {resolved}"
        else:
            assert resolved == numbers[index], f"{name} on {machine}"


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_checks_the_architecture_first_and_ends_with_returns(machine):
    program = seccomp.build_filter(machine)
    _, audit_arch = seccomp.ARCHES[machine]

    assert program[0] == (seccomp.BPF_LD_W_ABS, 0, 0, seccomp.OFF_ARCH)
    assert program[1][0] == seccomp.BPF_JEQ_K and program[1][3] == audit_arch
    assert program[-1] == (seccomp.BPF_RET_K, 0, 0, seccomp.SECCOMP_RET_KILL_PROCESS)
    assert len(program) < 4096


def _probe(code: str) -> subprocess.CompletedProcess:
    """Run probe code in a child interpreter that installs the filter first."""
    prelude = textwrap.dedent("""\
        import ctypes, errno, json, os, socket, sys, threading
        from executor.runner import seccomp
        """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          cwd=PROJECT_EXECUTOR, capture_output=True, timeout=60)


@pytest.mark.skipif(platform.machine() not in seccomp.ARCHES, reason="no syscall table for this CPU")
def test_it_confines_every_thread_and_leaves_ordinary_work_alone():
    result = _probe("""\
        def attempts():
            out = {}
            for name, family, kind in [("inet", socket.AF_INET, socket.SOCK_STREAM),
                                       ("inet6", socket.AF_INET6, socket.SOCK_STREAM),
                                       ("udp", socket.AF_INET, socket.SOCK_DGRAM),
                                       ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
                                       ("unix", socket.AF_UNIX, socket.SOCK_STREAM)]:
                try:
                    socket.socket(family, kind).close()
                    out[name] = "ok"
                except OSError as e:
                    out[name] = errno.errorcode[e.errno]
            try:
                a, b = socket.socketpair()
                out["socketpair"] = "ok"
            except OSError as e:
                out["socketpair"] = errno.errorcode[e.errno]
            for name, flags in [("unshare-user", os.CLONE_NEWUSER), ("unshare-net", os.CLONE_NEWNET),
                                ("unshare-mount", os.CLONE_NEWNS)]:
                try:
                    os.unshare(flags)
                    out[name] = "ok"
                except OSError as e:
                    out[name] = errno.errorcode[e.errno]
            libc = ctypes.CDLL(None, use_errno=True)
            for name, nr_args in [("io_uring_setup", (425, 1, 0)), ("bpf", (321, 0, 0, 0)),
                                  ("keyctl", (250, 0, 0)), ("ptrace", (101, 0, 0, 0, 0)),
                                  ("clone3", (435, 0, 0)), ("perf_event_open", (298, 0, 0, 0, 0, 0))]:
                ctypes.set_errno(0)
                libc.syscall(*nr_args)
                out[name] = errno.errorcode.get(ctypes.get_errno(), "ok")
            return out

        hold = threading.Event()
        from_thread = {}
        def in_thread():
            hold.wait()
            from_thread.update(attempts())
        t = threading.Thread(target=in_thread)
        t.start()  # before the filter: TSYNC must reach it
        seccomp.install()
        hold.set()
        t.join()
        from_main = attempts()
        worker = threading.Thread(target=lambda: None)
        worker.start()
        worker.join()
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        print(json.dumps({"main": from_main, "thread": from_thread, "forked": forked}))
        """)

    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    expected = {
        "inet": "EPERM", "inet6": "EPERM", "udp": "EPERM", "netlink": "EPERM", "unix": "ok",
        "socketpair": "ok", "unshare-user": "EPERM", "unshare-net": "EPERM", "unshare-mount": "EPERM",
        "io_uring_setup": "EPERM", "bpf": "EPERM", "keyctl": "EPERM", "ptrace": "EPERM",
        "clone3": "ENOSYS", "perf_event_open": "EPERM",
    }
    assert report["main"] == expected
    assert report["thread"] == expected
    assert report["forked"] == 7  # fork (clone without CLONE_NEW*) and threads still work


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 exists on x86_64 only")
def test_a_syscall_through_another_abi_kills_the_process():
    result = _probe("""\
        seccomp.install()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall(0x40000000 | 39)  # x32 getpid: its numbers would slip past the table
        print("survived")
        """)

    assert result.returncode == -signal.SIGSYS
    assert b"survived" not in result.stdout


def test_every_process_of_the_sandbox_is_under_the_filter(run):
    """No process inside the sandbox escapes seccomp: the runner is pid 1 (bwrap's own init, which
    ran outside the filter as the runner's uid and could be taken over through /proc/1/mem, is not
    there), and what the snippet starts inherits the filter."""
    result = run(textwrap.dedent("""\
        import os, subprocess
        child = subprocess.Popen(["/opt/playground/venv/bin/python", "-c", "import time; time.sleep(5)"])
        for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
            status = dict(line.split(":\\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines()
                          if ":\\t" in line)
            print(pid, os.path.basename(os.readlink(f"/proc/{pid}/exe")), status["Seccomp"])
        child.kill()
        """))
    assert result.status == "succeeded", result
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0][:2] == ["1", rows[0][1]] and rows[0][1].startswith("python")
    assert len(rows) == 2 and all(seccomp == "2" for _pid, _exe, seccomp in rows), rows
