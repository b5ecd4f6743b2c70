/// The hostile client of #51's attack tests, in Python so that it runs as another uid under
/// `setpriv` (as an attacker on the box would) — `python3 attacks.py SOCKET MODE`. It prints one
/// line of results (`key=value ...`) on stdout and exits.
///
/// - `flood STOPFILE`: says HELLO and sends WATCH lines (which have no reply) as fast as the
///   socket takes them until STOPFILE exists; says `flooding` on stderr once 1 MB has gone, and
///   `sent=BYTES` there at the end;
/// - `unread N`: says HELLO and sends N WHO requests without ever reading a reply; prints
///   whether gpslocd closed the connection (`closed=1`);
/// - `connections N`: opens N connections (raising its own descriptor limit) and counts the
///   ones refused with gpslocd's "already holds" reason (`refused=`) and for want of descriptors
///   (`descriptors=`);
/// - `floodwatch STOP`: WATCHes as `flooder` and, once a fix has come, floods WHO requests from a
///   second thread while reading everything; once told `denied` it stops flooding, watches what comes
///   in the next half second (ten of gpsd's fixes) and stops (or when the file STOP exists); writes (stderr, `result …`) when (CLOCK_MONOTONIC)
///   an AUTHORIZATION `denied` arrived (`denied_at=`), the fixes after it (`late=`), all fixes and bytes sent;
/// - `churn N`: N short-lived processes, 100 at a time, each connecting and exiting at once;
///   prints the seconds taken (`seconds=`);
/// - `welcome`: connects, says HELLO and prints the seconds until WELCOME (`seconds=`), whether it
///   came (`welcome=`) and whether gpslocd refused the connection instead (`refused=`);
/// - `inuse HOW RESULTS`: run in a terminal's foreground (script(1)), says HELLO as `wiu` and
///   WATCHes; once a fix has come (it is When In Use and in use), it tries to keep receiving
///   out of the foreground — HOW: `keep` (stays: the control), `setsid` (forks, the parent
///   exits, the child calls setsid()), `pass` (hands the connection to a setsid() child over
///   SCM_RIGHTS and closes its own copy, staying in the foreground), `pty` (forks, the parent
///   exits, the child makes a pseudo-terminal of its own and becomes its foreground). Whoever
///   holds the connection then reads until gpslocd says `inUse: false` (or 40 fixes came) and
///   writes `welcome=… told=… late=… fixes=…` to the file RESULTS (renamed into place;
///   after 90 s it gives up and writes what it saw, with `error=`): `late` counts fixes after
///   that AUTHORIZATION line, up to the reply to a WHO asked after it;
/// - `forge KIND DROP`: in a user namespace of its own (run under `unshare -Ur`), plants a
///   `/.flatpak-info` of KIND (`sparse`: 1 GB, `fifo`, `link`, `nameless`, `valid`) in a root
///   folder under DROP, chroot()s into it, connects, says HELLO and asks to GRANT itself; prints
///   a JSON object with gpslocd's first line (`first`), its replies and the seconds taken;
/// - `grant APP STATUS`: grants its own uid's APP (as the user would with `gpsloc auth grant`),
///   prints whether gpslocd accepted (`ok=`) and, connecting again as APP, whether the WELCOME
///   then says it may receive (`authorized=`).
let brokerAttackScript = #"""
    import os, resource, select, socket, sys, time
    path, mode = sys.argv[1], sys.argv[2]
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return s
    hello = b'{"class":"HELLO","version":2,"app":"attacker"}\n'
    if mode == "flood":
        s = connect(); s.sendall(hello)
        chunk = b'{"class":"WATCH","enable":false}\n' * 2000
        stop, sent = sys.argv[3], 0
        while not os.path.exists(stop):
            try:
                s.sendall(chunk); sent += len(chunk)
            except OSError:
                break
            if sent >= 1 << 16 and sent - len(chunk) < 1 << 16:
                sys.stderr.write("flooding\n"); sys.stderr.flush()
        sys.stderr.write("sent=%d\n" % sent); sys.stderr.flush()
    elif mode == "unread":
        s = connect()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(hello)
        line = b'{"class":"WHO","id":1}\n'
        closed = 0
        try:
            for _ in range(int(sys.argv[3]) // 1000):
                s.sendall(line * 1000)
        except OSError:
            closed = 1
        if not closed:
            s.settimeout(30)
            try:
                while s.recv(1 << 20):
                    pass
                closed = 1
            except OSError:
                closed = 1
        print("closed=%d" % closed, flush=True)
    elif mode == "connections":
        want = int(sys.argv[3])
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want + 64), hard))
        sockets = [connect() for _ in range(want)]
        refused, descriptors = 0, 0
        poller = select.poll()
        byfd = {}
        for s in sockets:
            poller.register(s, select.POLLIN)
            byfd[s.fileno()] = s
        deadline = time.monotonic() + 5
        seen = set()
        while time.monotonic() < deadline:
            for fd, _ in poller.poll(200):
                if fd in seen:
                    continue
                seen.add(fd)
                poller.unregister(fd)
                try:
                    data = byfd[fd].recv(4096)
                    if b"already holds" in data:
                        refused += 1
                    elif b"run out of file descriptors" in data:
                        descriptors += 1
                except OSError:
                    pass
            if want > 1024 and refused >= want - 1024:
                break
        print("refused=%d descriptors=%d" % (refused, descriptors), flush=True)
    elif mode == "inuse":
        import array, json, signal, termios, fcntl
        how, results = sys.argv[3], sys.argv[4]
        welcome, told, late, fixes, error = 0, 0, 0, 0, ""
        def report():
            partial = results + ".part"
            with open(partial, "w") as out:
                out.write("welcome=%d told=%d late=%d fixes=%d%s\n" % (welcome, told, late, fixes, error))
            os.rename(partial, results)
        def give_up(signum, frame):
            global error
            error = " error=gave-up-after-90s"
            report()
            os._exit(1)
        signal.signal(signal.SIGALRM, give_up)
        signal.alarm(90)
        s = connect()
        s.sendall(b'{"class":"HELLO","version":2,"app":"wiu"}\n{"class":"WATCH"}\n')
        buffered = b""
        def message():
            global buffered
            while b"\n" not in buffered:
                more = s.recv(65536)
                if not more:
                    return None
                buffered += more
            line, buffered = buffered.split(b"\n", 1)
            return json.loads(line)
        while True:
            m = message()
            if m is None:
                error = " error=closed-before-a-fix"
                report()
                sys.exit(1)
            if m["class"] == "WELCOME":
                welcome = int(m["inUse"])
            if m["class"] == "FIX" and "lat" in m:
                break
        if how in ("setsid", "pty"):
            # The parent leads the terminal's session: when it exits, the kernel hangs up its
            # foreground group, which the child is in until setsid(). The child ignores the
            # hangup and the parent waits for its setsid() (a busy machine ran the exit first).
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            ready_r, ready_w = os.pipe()
            if os.fork() != 0:
                os.close(ready_w)
                os.read(ready_r, 1)
                os._exit(0)
            os.close(ready_r)
            os.setsid()
            os.write(ready_w, b"x")
            os.close(ready_w)
            if how == "pty":
                master, slave = os.openpty()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        elif how == "pass":
            left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            child = os.fork()
            if child != 0:
                left.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [s.fileno()]))])
                s.close()
                os.waitpid(child, 0)
                os._exit(0)
            os.setsid()
            _, ancillary, _, _ = right.recvmsg(1, socket.CMSG_LEN(4))
            fd = array.array("i", ancillary[0][2][:4])[0]
            s.close()
            s = socket.socket(fileno=fd)
        signal.alarm(90)
        asked = False
        while True:
            m = message()
            if m is None:
                break
            if m["class"] == "AUTHORIZATION" and not m["inUse"]:
                told = 1
                s.sendall(b'{"class":"WHO","id":99}\n')
                asked = True
            elif m["class"] == "FIX" and "lat" in m:
                fixes += 1
                if told:
                    late += 1
                if not told and fixes >= 40:
                    break
            elif m["class"] == "REPLY" and asked:
                break
        report()
    elif mode == "grant":
        import json
        app, status = sys.argv[3], sys.argv[4]
        def lines(s):
            data = b""
            while True:
                more = s.recv(4096)
                if not more:
                    return
                data += more
                while b"\n" in data:
                    line, data = data.split(b"\n", 1)
                    yield json.loads(line)
        s = connect()
        s.sendall(('{"class":"HELLO","version":2,"app":"%s"}\n{"class":"GRANT","id":7,"app":"%s","status":"%s"}\n'
                   % (app, app, status)).encode())
        ok = next(m for m in lines(s) if m["class"] == "REPLY")["ok"]
        s.close()
        s = connect()
        s.sendall(('{"class":"HELLO","version":2,"app":"%s"}\n' % app).encode())
        welcome = next(m for m in lines(s) if m["class"] == "WELCOME")
        authorized = welcome["status"] in ("authorizedAlways", "authorizedWhenInUse")
        print("ok=%d authorized=%d" % (ok, authorized), flush=True)
    elif mode == "forge":
        # Run as "root" of a user namespace of its own (unshare -Ur): a root folder with a
        # planted /.flatpak-info, entered with chroot(); the socket is reached from the old
        # working folder (its own), which chroot() leaves where it was.
        import json, signal
        signal.alarm(60)
        kind, drop = sys.argv[3], sys.argv[4]
        fake = os.path.join(drop, "root-" + kind)
        os.mkdir(fake)
        info = os.path.join(fake, ".flatpak-info")
        if kind == "sparse":
            with open(info, "wb") as f:
                f.truncate(1 << 30)
        elif kind == "fifo":
            os.mkfifo(info)
        elif kind == "link":
            os.symlink("/etc/passwd", info)
        elif kind == "nameless":
            with open(info, "w") as f:
                f.write("[Application]\nruntime=runtime/org.example.Platform/x86_64/1\n")
        elif kind == "valid":
            with open(info, "w") as f:
                f.write("[Application]\nname=org.forged.Maps\n\n[Instance]\ninstance-id=1\n")
        folder, name = os.path.split(path)
        os.chdir(folder)
        os.chroot(fake)
        start = time.monotonic()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(name)
        try:  # refused at once, the connection may be closed before this is read
            s.sendall(b'{"class":"HELLO","version":2,"app":"forger"}\n'
                      b'{"class":"GRANT","id":7,"app":"org.forged.Maps","status":"authorizedAlways"}\n')
        except OSError:
            pass
        data = b""
        while data.count(b"\n") < 2:
            try:
                more = s.recv(65536)
            except ConnectionResetError:  # closed with the HELLO unread: its ERROR came first
                break
            if not more:
                break
            data += more
        first = json.loads(data.split(b"\n")[0])
        print(json.dumps({"seconds": time.monotonic() - start, "first": first,
                          "replies": [json.loads(l) for l in data.split(b"\n")[1:] if l]}), flush=True)
    elif mode == "floodwatch":
        # Receives fixes as `flooder` while a second thread floods requests, reading everything;
        # notes (CLOCK_MONOTONIC) when gpslocd's AUTHORIZATION `denied` arrives and counts the
        # fixes after it.
        import json, threading
        stop = sys.argv[3]
        s = connect()
        s.sendall(b'{"class":"HELLO","version":2,"app":"flooder"}\n{"class":"WATCH"}\n')
        state = {"denied_at": 0.0, "late": 0, "fixes": 0, "sent": 0}
        def flood():
            chunk = b'{"class":"WHO","id":1}\n' * 500
            while not os.path.exists(stop) and not state["denied_at"]:
                try:
                    s.sendall(chunk)
                except OSError:
                    return
                state["sent"] += len(chunk)
        buffered = b""
        flooding = None
        s.settimeout(0.1)
        while not os.path.exists(stop):
            # Told: what comes in the next half second (ten of gpsd's fixes) is watched, then it stops.
            if state["denied_at"] and time.monotonic() - state["denied_at"] > 0.5:
                break
            try:
                more = s.recv(1 << 20)
            except socket.timeout:
                continue
            if not more:
                break
            buffered += more
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                if b'"AUTHORIZATION"' in line and b'"denied"' in line and not state["denied_at"]:
                    state["denied_at"] = time.monotonic()
                elif line.startswith(b'{"class":"FIX"') and b'"lat"' in line:
                    state["fixes"] += 1
                    if state["denied_at"]:
                        state["late"] += 1
                    if flooding is None:
                        flooding = threading.Thread(target=flood, daemon=True)
                        flooding.start()
            if flooding is not None and state["sent"] >= 1 << 16 and not state.get("said"):
                state["said"] = True
                sys.stderr.write("flooding\n"); sys.stderr.flush()
        sys.stderr.write("result denied_at=%.6f late=%d fixes=%d sent=%d\n" % (
            state["denied_at"], state["late"], state["fixes"], state["sent"]))
        sys.stderr.flush()
    elif mode == "churn":
        # Connections from short-lived processes: each child connects and exits at once, so
        # gpslocd has something new to say of each (a pid that has exited, a disconnect).
        start = time.monotonic()
        for _ in range(int(sys.argv[3]) // 100):
            children = []
            for _ in range(100):
                child = os.fork()
                if child == 0:
                    try:
                        connect().sendall(hello)
                    finally:
                        os._exit(0)
                children.append(child)
            for child in children:
                os.waitpid(child, 0)
        print("seconds=%.3f" % (time.monotonic() - start), flush=True)
    elif mode == "welcome":
        start = time.monotonic()
        s = connect()
        try:  # a refused program's connection may be closed before its HELLO is read
            s.sendall(hello)
        except OSError:
            pass
        s.settimeout(60)
        data = b""
        while b"WELCOME" not in data:
            try:
                more = s.recv(4096)
            except ConnectionResetError:
                break
            if not more:
                break
            data += more
        print("seconds=%.3f welcome=%d refused=%d" % (time.monotonic() - start, b"WELCOME" in data,
                                                      b'"class":"ERROR"' in data), flush=True)
    """#
