"""The wrapper between the worker and bubblewrap: runs as root for a few milliseconds, then
becomes bubblewrap as the slot's unprivileged uid.

    worker (root) ── Popen(env={}, close_fds) ──▶ python -I -S enter.py SPEC    (root)
        1. joins the run's cgroup(s)            children inherit: no process is ever outside
        2. sets the rlimits                     inherited through bwrap by the runner
        3. stages the read-only sources         see below
        4. drops to uid/gid 60000+slot, no supplementary groups
        5. execs bwrap ──▶ bwrap pid 1 ──▶ python -m runner

Why a wrapper and not ``preexec_fn``: the worker is multi-threaded (Celery threads pool), where
``preexec_fn`` can deadlock; and joining the cgroup before bwrap exists leaves no window.

Why staging: bubblewrap runs unprivileged here (so that the sandbox's processes are a
throw-away uid on the host, not root), and unprivileged bubblewrap resolves every bind source as
that uid: a Python installed under /root (mode 0700) is out of its reach, and ``--ro-bind-fd``
does not help (bwrap realpath()s the descriptor back to the path). So, as root, in a private
mount namespace of its own, this wrapper bind-mounts each source onto a small tmpfs that any uid
can traverse; bubblewrap then binds from there. Nothing changes in the host's mount table.

Only the standard library, no project imports: it starts with ``-I -S`` in ~15 ms.
"""

import ctypes
import json
import os
import resource
import signal
import sys

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def fail(message: str) -> None:
    os.write(2, f"sandbox: {message}\n".encode())
    os._exit(127)


def mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def stage(stage_dir: str, binds: list[list[str]]) -> None:
    if libc.unshare(CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "unshare(CLONE_NEWNS): " + os.strerror(err))
    # Without this, the mounts below would propagate back to the host's namespace.
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("jax-playground-stage", stage_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
          "mode=0755,size=64k")
    for source, name in binds:
        target = os.path.join(stage_dir, name)
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        mount(source, target, None, MS_BIND | MS_REC)
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def enter_userns(uid_map: str, gid_map: str) -> None:
    """Move this process into a new user namespace whose uid and gid maps hold several ranges
    (a process may only write a one-line map of itself): a helper forked first, still root on
    the host, writes them once this process has unshared, and this process becomes uid 0 in it.
    The template launcher's namespace maps 0 to the template's own host uid and one uid per
    runner slot, so that the template, itself unprivileged on the host, can give each forked
    runner a uid of its own."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        try:
            os.close(ready_w)
            os.close(done_r)
            if os.read(ready_r, 1) != b"u":
                os._exit(1)
            parent = os.getppid()
            for name, text in (("uid_map", uid_map), ("gid_map", gid_map)):
                with open(f"/proc/{parent}/{name}", "w") as f:
                    f.write(text)
            os.write(done_w, b"m")
            os._exit(0)
        except BaseException:  # noqa: BLE001 - report through the exit code only
            os._exit(1)
    os.close(ready_r)
    os.close(done_w)
    try:
        if libc.unshare(CLONE_NEWUSER) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "unshare(CLONE_NEWUSER): " + os.strerror(err))
        os.write(ready_w, b"u")
        mapped = os.read(done_r, 1) == b"m"
    finally:
        os.close(ready_w)
        os.close(done_r)
        os.waitpid(helper, 0)
    if not mapped:
        raise OSError("cannot write the user namespace's uid and gid maps")


def main() -> None:
    spec = json.loads(sys.argv[1])
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # until bwrap sets its own
    try:
        for procs in spec["cgroup_procs"]:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
    except OSError as exc:
        fail(f"cannot join cgroup: {exc}")
    try:
        for name, soft, hard in spec["rlimits"]:
            resource.setrlimit(getattr(resource, name), (soft, hard))
    except (OSError, ValueError) as exc:
        fail(f"cannot set {name}: {exc}")
    try:
        stage(spec["stage"], spec["binds"])
    except OSError as exc:
        fail(f"cannot stage the sandbox's files: {exc}")
    if spec.get("userns"):
        try:
            enter_userns(spec["userns"]["uid_map"], spec["userns"]["gid_map"])
        except OSError as exc:
            fail(f"cannot create the user namespace: {exc}")
    try:
        os.setgroups([])
        os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    except OSError as exc:
        fail(f"cannot drop privileges: {exc}")
    try:
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    except OSError as exc:
        fail(f"cannot start {spec['argv'][0]}: {exc}")


if __name__ == "__main__":
    main()
