
# The packhost exec_py zygote (appended to the runner, whose code it has
# already imported and compiled). Started once, confined by the sandbox to
# its root folder, it waits on fd 3 (a SOCK_SEQPACKET socket private to the
# pack) for requests, each a JSON message with three file descriptors
# (stdout, stderr, the call's channel), and forks a child per request. The
# child leads its own session, narrows its confinement to its own call
# folder (a nested Landlock domain: it cannot read or signal its siblings),
# and serves the call as a fresh runner would. The zygote hands the pack a
# pidfd of each child (the pack signals a child only through it: a pid may
# be another process's once reaped), kills each child's group once the
# child has ended and before reaping it, and tells the pack how it ended.
import ctypes, gc, selectors, signal

# Landlock's system calls have the same numbers on every architecture.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_FS_ALL = (1 << 16) - 1  # every access right of ABI 6
_FS_READ = 1 | 4 | 8  # execute, read file, read dir
_FS_FILE = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # the rights that apply to a file
_SCOPE_ALL = 1 | 2  # abstract Unix sockets, signals
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _check(result, what):
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _narrow(read, write):
    """A nested Landlock domain: only `read` readable, only `write` writable."""
    attr = _RulesetAttr(_FS_ALL, 0, _SCOPE_ALL)
    ruleset = _check(_libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0), "landlock_create_ruleset")
    for paths, rights in ((read, _FS_READ), (write, _FS_ALL)):
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # what is not there grants nothing
            allowed = rights if os.path.isdir(path) else rights & _FS_FILE
            rule = _PathBeneath(allowed, fd)
            result = _libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
            os.close(fd)
            _check(result, f"landlock_add_rule {path}")
    _check(_libc.syscall(_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    os.close(ruleset)


_REHEARSAL_CATALOG = json.dumps({
    "tools": [{"pack": "proj", "function": "list", "signature": "proj.list()", "description": "",
               "input_schema": {"type": "object", "properties": {}}}],
    "projects": {"rehearsal": "/"}, "aliases": {"ls": "proj.list"},
})


def _rehearse():
    """Take one call's path without the call: a forked child's first touch
    of each page copies it (a fault of microseconds each, hundreds of them),
    so the child pays that while it waits, not while the caller does."""
    program, _, dotted = _compile("x = [1]\nx[0] + 1")
    namespace = _namespace(json.loads(_REHEARSAL_CATALOG), dotted)
    namespace["__packhost_return__"] = _Return
    exec(program, namespace)
    json.dumps({"type": "value", "has_value": True, **_value(namespace["__packhost_value__"], 64), "elapsed_ms": 0.5})


def _child(request, fds):
    try:
        out, err, channel = fds
        os.setsid()
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.dup2(channel, 3)  # replaces the zygote's control socket
        os.closerange(4, 1 << 16)
        os.chdir(request["dir"])
        os.environ["TMPDIR"] = request["dir"]
        if request["narrow"]:
            _narrow(request["read"], request["write"])
        _rehearse()
    except BaseException as exc:
        os.write(2, f"packhost sandbox: the call could not be prepared: {exc}\n".encode())
        os._exit(125)
    serve_one()


def _zygote():
    _rehearse()
    # Out of the collector's sight: a collection in a child would otherwise
    # touch (and so copy) every object the zygote made.
    gc.freeze()
    control = socket.socket(fileno=3)
    os.set_inheritable(3, False)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
                if not message:
                    os._exit(0)  # the pack went away
                request = json.loads(message)
                if len(fds) != 3:
                    for fd in fds:
                        os.close(fd)
                    control.send(json.dumps({"id": request["id"], "error": f"{len(fds)} descriptors, not 3"}).encode())
                    continue
                pid = os.fork()
                if pid == 0:
                    _child(request, fds)
                for fd in fds:
                    os.close(fd)
                # Opened before the child can be reaped (only here), so it is
                # the child's.
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ, pid)
                socket.send_fds(control, [json.dumps({"id": request["id"], "pid": pid}).encode()], [pidfd])
            else:
                selector.unregister(key.fileobj)
                os.close(key.fileobj)
                # Its group ends with it: killed while the unreaped child still
                # holds the group's number, which may be another's once reaped.
                try:
                    os.killpg(key.data, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # it never led a group (it ended before `setsid`)
                _, status = os.waitpid(key.data, 0)
                control.send(json.dumps({"exited": key.data, "status": status}).encode())


_zygote()
