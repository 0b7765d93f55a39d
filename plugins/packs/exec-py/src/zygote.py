
# The packhost exec_py zygote (appended to the runner, whose code it has
# already imported and compiled). Started once, confined by the sandbox to
# its root folder, it waits on fd 3 (a SOCK_SEQPACKET socket private to the
# pack) for requests, each a JSON message with three file descriptors
# (stdout, stderr, the call's channel), and forks a child per request. The
# child leads its own session, narrows its confinement to its own call
# folder as the request's narrowing says, through the sandbox's own code in
# the pack's library (it cannot read or signal its siblings), rehearses a
# call when it is forked ahead of one (a call waiting for it would only wait
# longer), says it is ready (one byte on its channel), and serves the call as
# a fresh runner would. The zygote hands the pack a
# pidfd of each child (the pack signals a child only through it: a pid may
# be another process's once reaped), kills each child's group once the
# child has ended and before reaping it, and tells the pack how it ended.
import ctypes, gc, selectors, signal


def _narrowing(library):
    """The sandbox's narrowing of a child, from the pack's own library
    (its first argument), loaded once here; a failure to load refuses only
    the calls that need it (none with the sandbox off)."""
    try:
        narrow_self = ctypes.CDLL(library).packhost_narrow_self
        narrow_self.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t)
    except (OSError, AttributeError) as exc:
        reason = f"cannot load the sandbox's narrowing from {library}: {exc}"

        def refused(narrowing):
            raise OSError(reason)
        return refused

    def narrow(narrowing):
        error = ctypes.create_string_buffer(1024)
        if narrow_self(narrowing.encode(), error, len(error)) != 0:
            raise OSError(error.value.decode(errors="replace"))
    return narrow


_narrow = _narrowing(sys.argv[1])


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


_READY = b"R"  # a child's one byte before the request (zygote.rs: READY)


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
        if request["narrowing"] is not None:
            _narrow(request["narrowing"])
        if request["rehearse"]:
            _rehearse()
        # Prepared: the pack counts it ready only now, so no call waits
        # behind a child's preparation while another could have served it.
        os.write(3, _READY)
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
