# The packhost exec_py runner. A fresh process (forked by the zygote, or
# started on its own), it waits on fd 3 (a socket private to the pack) for one
# request, runs the code in a fresh namespace, answers over the same socket,
# and exits. User prints go to the real stdout/stderr, which the pack
# captures; they never touch fd 3.
# Neither `threading` nor `tempfile` (which imports `random`) is imported
# here: both register code that runs in every forked child (about 0.3 ms a
# fork), and a forked child pays for every page it touches.
import _thread, ast, builtins, json, linecache, os, pathlib, socket, sys, textwrap, time, traceback

CODE = "<code>"
RUNNER = "<string>"  # this file, started with `python -c`
_channel = None
_unread = b""  # read past the last message
_next_id = 0
# One call at a time on the channel: a thread of the code waits for its own
# reply, which the pack may send in any order when calls overlap.
_channel_lock = _thread.allocate_lock()


def _open_channel():
    global _channel
    _channel = socket.socket(fileno=3)
    os.set_inheritable(3, False)  # children of user code must not hold the channel


def _send(message):
    # One JSON message a line; bytes, not a text file over the socket, which
    # costs a forked child more than its whole call.
    _channel.sendall(json.dumps(message).encode() + b"\n")


def _answer(message):
    """The last message. Output first, to its end: the pack takes the answer
    as the end of the call and kills what is left."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass  # the code's own stream, broken or closed: nothing to add
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    _send(message)


def _receive():
    global _unread
    chunks = [_unread]
    while b"\n" not in chunks[-1]:
        chunk = _channel.recv(1 << 16)
        if not chunk:
            os._exit(70)  # the pack went away
        chunks.append(chunk)
    line, _, _unread = b"".join(chunks).partition(b"\n")
    return json.loads(line)


class PackError(Exception):
    """A pack function failed: `code` is its stable error code."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _call(tool, args, kwargs):
    """The host binds the arguments and checks them: a bad call reads as it
    does from `run`."""
    global _next_id
    sys.stdout.flush()
    sys.stderr.flush()
    with _channel_lock:
        _next_id += 1
        _send({"type": "call", "id": _next_id, "tool": tool, "args": args, "kwargs": kwargs})
        reply = _receive()
    if "error" in reply:
        error = reply["error"]
        if error.get("code") == "INVALID_ARGUMENT":
            raise TypeError(error.get("message", "") + (f"; {error['help']}" if error.get("help") else ""))
        raise PackError(error.get("code", "INTERNAL"), error.get("message", ""))
    return reply["ok"]


class _Function:
    def __init__(self, tool, signature, doc=""):
        self._tool, self._signature = tool, signature
        self.__doc__ = f"{signature}\n\n{doc}"

    def __repr__(self):
        return f"<packhost tool {self._signature}>"

    def __call__(self, *args, **kwargs):
        return _call(self._tool, list(args), kwargs)


class _Prompt:
    """A pack's MCP prompt: called with its arguments by name, it renders to
    MCP's GetPromptResult as a dict, `{"description"?, "messages": [{"role",
    "content": {"type": "text", "text"} or another content block}]}`."""

    def __init__(self, spec):
        self._listed = spec["listed"]
        arguments = spec.get("arguments") or []
        shown = ", ".join(a["name"] + ("" if a.get("required") else "?") for a in arguments)
        self._signature = f"{self._listed}({shown})"
        lines = [f"{a['name']}: {a.get('description') or ''}" for a in arguments]
        self.__doc__ = "\n".join([self._signature, "", spec.get("description") or "", *lines])

    def __repr__(self):
        return f"<packhost prompt {self._signature}>"

    def __call__(self, *args, **arguments):
        if args:
            raise TypeError(f"prompt `{self._listed}` takes its arguments by name: {self._signature}")
        return _render(self._listed, arguments)


def _render(listed, arguments):
    # An optional argument left as None is not given (prompt arguments are strings).
    given = {name: value for name, value in arguments.items() if value is not None}
    return _call("prompts/get", [], {"name": listed, "arguments": given})


class _Prompts:
    """`<pack>.prompts`: the pack's prompts by name."""

    def __init__(self, pack, prompts):
        self._pack, self._prompts = pack, prompts

    def __repr__(self):
        return f"<packhost prompts of {self._pack}: {', '.join(self._prompts) or '(none)'}>"

    def __dir__(self):
        return list(self._prompts)

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        try:
            return self._prompts[attribute]
        except KeyError:
            raise AttributeError(f"pack `{self._pack}` has no prompt `{attribute}`; prompts: {', '.join(self._prompts) or '(none)'}") from None


class _Pack:
    def __init__(self, name, functions, prompts=None):
        self._name, self._functions = name, functions
        # A function named `prompts` keeps its name; its pack's prompts are then `packhost.get_prompt`'s.
        self._prompts = None if "prompts" in functions else _Prompts(name, prompts or {})

    def __repr__(self):
        return f"<packhost pack {self._name}: {', '.join(self._functions)}>"

    def __dir__(self):
        return list(self._functions) + ([] if self._prompts is None else ["prompts"])

    def _missing(self, attribute):
        return AttributeError(f"pack `{self._name}` has no function `{attribute}`; functions: {', '.join(self._functions) or '(none)'}")

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        if attribute in self._functions:
            return self._functions[attribute]
        if attribute == "prompts" and self._prompts is not None:
            return self._prompts
        raise self._missing(attribute)


class ProjectPath(pathlib.PosixPath):
    """A path inside a configured project: `proj.<name> / "src"`."""


class _Projects(_Pack):
    """`proj`: its functions, and every project as a ProjectPath."""

    def __init__(self, name, functions, prompts, projects):
        super().__init__(name, functions, prompts)
        self._projects = projects

    def __dir__(self):
        return super().__dir__() + list(self._projects)

    def _missing(self, attribute):
        return AttributeError(
            f"`proj` has no function or project `{attribute}`; functions: {', '.join(self._functions) or '(none)'}; "
            f"projects: {', '.join(self._projects) or '(none)'}"
        )

    def __getattr__(self, attribute):
        # Functions first: a project named `list` or `path` must not hide `proj.list()`.
        if attribute in self._projects and attribute not in self._functions and not attribute.startswith("__"):
            return ProjectPath(self._projects[attribute])
        return super().__getattr__(attribute)


class _Host(_Pack):
    """`packhost`: the host's own functions (discovery, kept results), and
    the caller's prompts and resources as its MCP client sees them."""

    def __init__(self, name, functions, prompts):
        super().__init__(name, functions)
        self._all_prompts = prompts

    def __dir__(self):
        return super().__dir__() + ["get_prompt", "prompts", "read_resource", "resources"]

    def prompts(self):
        """Every prompt you may render: [{"name", "description", "arguments": [{"name", "description"?, "required"}]}]."""
        return [{"name": p["listed"], "description": p.get("description") or "", "arguments": p.get("arguments") or []} for p in self._all_prompts]

    def get_prompt(self, name, **arguments):
        """Render prompt `name` as `packhost.prompts()` lists it: MCP's GetPromptResult as a dict."""
        return _render(name, arguments)

    def read_resource(self, uri):
        """Read resource `uri` (a pack's, or a kept result `packhost://results/<handle>`): MCP's
        ReadResourceResult as a dict, `{"contents": [{"uri", "mimeType"?, "text"} or {..., "blob": base64}]}`."""
        return _call("resources/read", [], {"uri": uri})

    def resources(self):
        """The resources you may read: {"resources": [{"uri", "name", ...}], "resourceTemplates": [{"uriTemplate", "name", ...}]}."""
        return _call("resources/list", [], {})


class _Namespace(dict):
    """Globals that explain an unknown name: what packs, functions and aliases
    exist, and the closest one (a name used as `name.attr` that is no pack
    raises AttributeError)."""

    def __missing__(self, name):
        if name.startswith("__") or hasattr(builtins, name):
            raise KeyError(name)  # lets Python fall back to the builtins
        import difflib  # only when a name is unknown: the warm interpreter stays lean

        packs, aliases = self.get("__packs__", {}), self.get("__aliases__", [])
        # A model reads this on every mistake: the closest few names, never the whole catalog.
        # Each candidate as it is shown: a function by its full name, found by that or its own.
        shown = {known: known for known in [*packs, *aliases]}
        for pack, names in packs.items():
            for function in names:
                shown[f"{pack}.{function}"] = f"{pack}.{function}"
                shown.setdefault(function, f"{pack}.{function}")
        for builtin in dir(builtins):
            shown.setdefault(builtin, builtin)
        close = dict.fromkeys(shown[match] for match in difflib.get_close_matches(name, list(shown), n=_CLOSEST))
        hint = f"did you mean {', '.join(f'`{c}`' for c in close)}? " if close else ""
        what = f"{hint}packs: {', '.join(packs) or '(none)'}"
        what += f"; aliases: {', '.join(aliases[:_CLOSEST])}{', …' if len(aliases) > _CLOSEST else ''}" if aliases else ""
        what += "; `packhost.packs()` lists every function" if "packhost" in packs else ""
        if name in self.get("__dotted__", ()):
            raise AttributeError(f"no pack `{name}`; {what}")
        raise NameError(f"name '{name}' is not defined; {what}", name=name)


_CLOSEST = 3  # names suggested for an unknown name


def _namespace(bindings, dotted):
    namespace = _Namespace(__name__="__main__", __builtins__=builtins, PackError=PackError, ProjectPath=ProjectPath, __dotted__=dotted)
    if bindings is None:
        return namespace
    packs, prompts = {}, {}
    for tool in bindings.get("tools", []):
        function = _Function(f"{tool['pack']}.{tool['function']}", tool["signature"], tool.get("description", ""))
        packs.setdefault(tool["pack"], {})[tool["function"]] = function
    for prompt in bindings.get("prompts", []):
        packs.setdefault(prompt["pack"], {})
        prompts.setdefault(prompt["pack"], {})[prompt["name"]] = _Prompt(prompt)
    for name, functions in packs.items():
        own = prompts.get(name)
        namespace[name] = _Projects(name, functions, own, bindings.get("projects", {})) if name == "proj" else _Pack(name, functions, own)
    # `packhost` is there also for a caller that may not call its functions: its prompts and resources are.
    namespace["packhost"] = _Host("packhost", packs.get("packhost", {}), bindings.get("prompts", []))
    aliases = []
    for alias, target in (bindings.get("aliases") or {}).items():
        pack, _, function = target.partition(".")
        if pack in packs and function in packs[pack]:
            namespace[alias] = packs[pack][function]
            aliases.append(alias)
    namespace["__packs__"] = {name: sorted(packs[name]) for name in sorted(packs)}
    namespace["__aliases__"] = sorted(aliases)
    return namespace


class _Return(BaseException):  # not caught by the user's `except Exception`
    def __init__(self, value):
        self.value = value


class _TopLevelReturns(ast.NodeTransformer):
    """`return x` outside any function ends the block with value x."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node):
        value = node.value or ast.Constant(value=None)
        raise_ = ast.Raise(exc=ast.Call(func=ast.Name(id="__packhost_return__", ctx=ast.Load()), args=[value], keywords=[]), cause=None)
        return ast.copy_location(raise_, node)


def _parse(code):
    code = textwrap.dedent(code)
    try:
        return code, ast.parse(code, CODE)
    except (TabError, IndentationError) as first:
        # Tabs and spaces mixed inside one block: try tabs as 4 then 8 columns.
        for width in (4, 8):
            try:
                expanded = textwrap.dedent(code.expandtabs(width))
                return expanded, ast.parse(expanded, CODE)
            except SyntaxError:
                pass
        raise first


def _compile(code):
    code, tree = _parse(code)
    has_value = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    if has_value:
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name(id="__packhost_value__", ctx=ast.Store())], value=last.value), last
        )
    tree = _TopLevelReturns().visit(tree)
    ast.fix_missing_locations(tree)
    linecache.cache[CODE] = (len(code), None, code.splitlines(True), CODE)
    dotted = {node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
    return compile(tree, CODE, "exec"), has_value, dotted


def _user_frames(tb):
    """Frames of the user's code and what it called; the runner's are hidden."""
    return [frame for frame in traceback.extract_tb(tb) if frame.filename != RUNNER]


def _error(exc, started):
    # A syntax error is the code's own, not a frame's: no stack to show.
    compiling = isinstance(exc, SyntaxError) and exc.filename == CODE
    frames = [] if compiling else _user_frames(exc.__traceback__)
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    line = next((frame.lineno for frame in reversed(frames) if frame.filename == CODE), None)
    if compiling:
        line = exc.lineno
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return {"type": "error", "error_type": type(exc).__name__, "error_message": message, "traceback": "".join(lines), "line": line, "column": getattr(exc, "offset", None) if isinstance(exc, SyntaxError) else None, "elapsed_ms": (time.perf_counter() - started) * 1000}


def _value(value, limit):
    try:
        text = json.dumps(value, allow_nan=False)
        if len(text) <= limit:
            return {"result": value, "result_repr": None}
    except (TypeError, ValueError, RecursionError):
        pass
    representation = repr(value)
    if len(representation) > limit:
        representation = representation[:limit] + "\n[Output truncated]"
    return {"result": None, "result_repr": representation}


def main():
    request = _receive()
    os.chdir(request["cwd"])
    os.environ["TMPDIR"] = request["tmpdir"]
    # `tempfile` reads TMPDIR when first used; one imported already (by a
    # site `.pth` file, say) may have read it.
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = request["tmpdir"]
    sys.stdin = open(os.devnull)
    started = time.perf_counter()
    try:
        program, has_value, dotted = _compile(request["code"])
    except SyntaxError as exc:
        _answer(_error(exc, started))
        return
    namespace = _namespace(request.get("bindings"), dotted)
    namespace["__packhost_return__"] = _Return
    answer = {"type": "value", "has_value": has_value}
    try:
        exec(program, namespace)
        value = namespace.get("__packhost_value__")
    except _Return as returned:
        answer["has_value"] = True
        value = returned.value
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _answer(_error(exc, started))
            return
        answer["has_value"], value = False, None
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: report, don't die
        _answer(_error(exc, started))
        return
    if answer["has_value"]:
        answer.update(_value(value, request["max_result_bytes"]))
    answer["elapsed_ms"] = (time.perf_counter() - started) * 1000
    _answer(answer)


def serve_one():
    _open_channel()
    main()
    os._exit(0)  # output is flushed and closed by `_answer`


if "_PACKHOST_ZYGOTE" not in globals():
    serve_one()
