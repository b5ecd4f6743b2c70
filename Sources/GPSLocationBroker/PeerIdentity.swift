import CBrokerSupport
import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// Who is at the other end of a Unix socket, as the kernel says — never as the program says.
///
/// - uid, gid, pid: `SO_PEERCRED`, fixed when the program connected.
/// - The process is pinned with a pidfd: `SO_PEERPIDFD` (Linux 6.5+) names the very process
///   that connected; on older kernels `pidfd_open(pid)` is taken and the process's start time
///   (`/proc/PID/stat`) must not be later than the connection — a pid recycled since then is
///   refused. Everything read from `/proc/PID` is trusted only if the pidfd still shows the
///   process alive after the reads (a process that exited mid-read is refused: its pid may
///   already name another).
/// - The systemd unit: the cgroup (`/proc/PID/cgroup`) when it is a system service
///   (`/system.slice/NAME.service`): only root (systemd) can place a process there. A user's own
///   units and scopes are under the user's control and are not used.
/// - The Flatpak id: `[Application] name=` in `/proc/PID/root/.flatpak-info`, as the desktop
///   portal reads it (needs gpslocd to be able to read the process's root: root or
///   `CAP_SYS_PTRACE`; when it cannot, or the file is not a Flatpak's, the program is refused —
///   see `flatpakApp(pid:)`).
/// - In use: the process is in the foreground process group of a terminal (`tty_nr`, `tpgid`).
struct PeerIdentity: Sendable, Equatable {
    var uid: UInt32
    var gid: UInt32
    var pid: Int32
    /// The system service the process runs in (`gpsd.service`), if any.
    var unit: String?
    /// The Flatpak application id, if the process is a Flatpak sandbox.
    var flatpak: String?
    /// The foreground of a terminal (when it connected; see `isInUse`).
    var inUse: Bool
    /// The pidfd that pins the process, kept open while it is connected (-1: none).
    var pidfd: Int32 = -1
    /// The controlling terminal it connected from (`tty_nr`; 0: none): When In Use is judged on
    /// that terminal only (`TerminalUse`).
    var terminal = 0
    /// The inode of the program's end of the connection (`sock_diag`; 0: unknown): how its
    /// current holders are found (`TerminalUse`).
    var peerInode: UInt = 0

    init(uid: UInt32, gid: UInt32, pid: Int32, unit: String? = nil, flatpak: String? = nil, inUse: Bool = false) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.unit = unit
        self.flatpak = flatpak
        self.inUse = inUse
    }

    /// How the app id is known: `flatpak` and `unit` are enforced by the kernel; `label` is what
    /// the program said, which within one uid is only a label.
    var kind: String { flatpak != nil ? "flatpak" : unit != nil ? "unit" : "label" }

    /// The app id decisions are keyed by: the Flatpak id, else the unit, else `label`.
    func appID(label: String) -> String { flatpak ?? unit ?? label }

    /// Why a peer could not be identified.
    struct Failure: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The peer of a connected socket; `acceptedAt`: `CLOCK_BOOTTIME` seconds when it was accepted.
    static func of(socket fd: Int32, acceptedAt: Double) throws(Failure) -> PeerIdentity {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        guard gpslocd_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
            throw Failure(description: "SO_PEERCRED failed (\(String(cString: strerror(errno))))")
        }
        guard pid > 0 else {
            // SO_PEERCRED's pid is 0 for a process in a PID namespace gpslocd cannot see.
            throw Failure(
                description: "the connecting process is in a PID namespace gpslocd cannot see (another container's), "
                    + "so its identity cannot be read: run the program where gpslocd runs, or gpslocd in its container")
        }
        var pidfd = gpslocd_peer_pidfd(fd)
        let exact = pidfd >= 0
        if !exact { pidfd = gpslocd_pidfd_open(pid) }
        guard pidfd >= 0 else { throw pidfdFailure(pid, errno: errno) }
        do {
            var identity = try read(
                pid: pid, uid: uid, gid: gid, pidfd: pidfd, startedNoLaterThan: exact ? nil : acceptedAt)
            identity.pidfd = pidfd
            identity.peerInode = gpslocd_unix_peer_inode(fd)
            return identity
        } catch {
            close(pidfd)
            throw error
        }
    }

    /// Whether the process `pidfd` pins is the foreground of a terminal now; nil once it has
    /// exited (its pid may name another process by then). gpslocd asks again every second for
    /// When In Use programs, so one that leaves the foreground stops receiving.
    static func isInUse(pid: Int32, pidfd: Int32) -> Bool? {
        guard pidfd >= 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 5, let processGroup = Int(fields[2]), let tty = Int(fields[4]),
            let foreground = Int(fields[5]), gpslocd_pidfd_alive(pidfd) == 1
        else { return nil }
        return tty != 0 && foreground == processGroup
    }

    /// Reads what `/proc` says of `pid`, pinned by `pidfd` (see the type). `startedNoLaterThan`:
    /// when the pidfd was opened after the fact, the latest start time (boot seconds) the
    /// connecting process can have.
    static func read(
        pid: Int32, uid: UInt32, gid: UInt32, pidfd: Int32, startedNoLaterThan: Double?
    ) throws(Failure) -> PeerIdentity {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else {
            if errno == EMFILE || errno == ENFILE { throw outOfDescriptors(pid) }
            throw Failure(description: "the connecting process (pid \(pid)) has exited")
        }
        // Fields after the command's closing parenthesis: state is field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let processGroup = Int(fields[2]), let tty = Int(fields[4]),
            let foreground = Int(fields[5]), let startTicks = Double(fields[19])
        else { throw Failure(description: "/proc/\(pid)/stat could not be read") }
        if let latest = startedNoLaterThan, startTicks / Double(sysconf(Int32(_SC_CLK_TCK))) > latest + 0.02 {
            throw Failure(
                description: "pid \(pid) belongs to a process started after the connection (the pid was recycled)")
        }
        var identity = PeerIdentity(uid: uid, gid: gid, pid: pid, inUse: tty != 0 && foreground == processGroup)
        identity.terminal = tty
        if let cgroup = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) {
            identity.unit = systemUnit(cgroup: cgroup)
        }
        identity.flatpak = try flatpakApp(pid: pid)
        // Trusted only if the process is still the one the pidfd pins.
        guard gpslocd_pidfd_alive(pidfd) == 1 else {
            throw Failure(description: "the connecting process (pid \(pid)) exited while it was identified")
        }
        return identity
    }

    /// `NAME.service` when the unified cgroup path is a system service's.
    static func systemUnit(cgroup: String) -> String? {
        for line in cgroup.split(separator: "\n") where line.hasPrefix("0::/system.slice/") {
            let parts = line.dropFirst("0::/system.slice/".count).split(separator: "/")
            guard let unit = parts.first, unit.hasSuffix(".service") else { return nil }
            return String(unit)
        }
        return nil
    }

    /// Why `pidfd_open(pid)` failed, as the refused program is told: gone (`ESRCH`), gpslocd out
    /// of descriptors, or a kernel or a seccomp filter without `pidfd_open` (Linux before 5.3,
    /// some container runtimes' profiles, valgrind) — then nobody can be identified, and gpslocd
    /// says so instead of blaming the program (#51: identity fails closed, but says why).
    static func pidfdFailure(_ pid: Int32, errno code: Int32) -> Failure {
        switch code {
        case EMFILE, ENFILE:
            return outOfDescriptors(pid)
        case ESRCH:
            return Failure(description: "the connecting process (pid \(pid)) has already exited")
        default:
            return Failure(
                description: "gpslocd cannot pin the connecting process (pid \(pid)): pidfd_open failed ("
                    + "\(String(cString: strerror(code)))) — it needs Linux 5.3 or later, and a seccomp filter (a "
                    + "container's) that allows pidfd_open; without it no program can be identified, so none is served")
        }
    }

    /// gpslocd could not open what it needs to identify the program: its own limit, not the
    /// program's doing.
    static func outOfDescriptors(_ pid: Int32) -> Failure {
        Failure(
            description: "gpslocd has run out of file descriptors and cannot identify the connecting process (pid "
                + "\(pid)): raise LimitNOFILE in gpslocd.service, or find the program holding many connections "
                + "(`gpsloc auth who`)")
    }

    /// The largest `.flatpak-info` read (Flatpak's own are well under 4 KB).
    static let flatpakInfoLimit = 64 << 10

    /// The Flatpak app the process runs as, nil when it is not in a Flatpak sandbox — or a
    /// failure when that cannot be told, so that an app gpslocd cannot place is refused rather
    /// than trusted as an unsandboxed label (#51: under the unit without the capability, a
    /// Flatpak app was a plain label and granted itself Always).
    ///
    /// As the desktop portal does it: the process's root (`/proc/PID/root`: gpslocd needs root
    /// or `CAP_SYS_PTRACE` for another uid's) is opened, and `.flatpak-info` in it — no file: not
    /// a sandbox; a root on FUSE (a toolbox container) that may not be opened: not a Flatpak. It
    /// is read bounded (#51: a 1 GB sparse file forged in a user namespace held gpslocd's loop
    /// for two minutes): opened without following a link and without blocking (a fifo planted
    /// there never stalls it), only a regular file of at most `flatpakInfoLimit` bytes, and its
    /// `[Application] name=` must be a valid Flatpak app id. Anything else is refused, with why.
    static func flatpakApp(pid: Int32) throws(Failure) -> String? {
        let rootPath = "/proc/\(pid)/root"
        let root = gpslocd_open_process_root(pid)
        guard root >= 0 else {
            let error = errno
            if error == EACCES, gpslocd_is_fuse(rootPath) == 1 { return nil }
            if error == EMFILE || error == ENFILE { throw outOfDescriptors(pid) }
            if error == ENOENT || error == ESRCH {
                throw Failure(description: "the connecting process (pid \(pid)) has exited")
            }
            throw Failure(
                description: "gpslocd may not open \(rootPath) (\(String(cString: strerror(error)))), so it cannot "
                    + "tell whether this program is a sandboxed app: run gpslocd as root or with CAP_SYS_PTRACE "
                    + "(gpslocd.service gives it)")
        }
        defer { close(root) }
        let fd = openat(root, ".flatpak-info", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { return nil }
            if error == EMFILE || error == ENFILE { throw outOfDescriptors(pid) }
            throw Failure(
                description: "this program's /.flatpak-info cannot be opened (\(String(cString: strerror(error)))): "
                    + "not a Flatpak sandbox's")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw Failure(description: "this program's /.flatpak-info is not a regular file: not a Flatpak sandbox's")
        }
        guard status.st_size <= flatpakInfoLimit else {
            throw Failure(
                description: "this program's /.flatpak-info has \(status.st_size) bytes (Flatpak's are a few KB; "
                    + "gpslocd reads at most \(flatpakInfoLimit)): not a Flatpak sandbox's")
        }
        var bytes = [UInt8](repeating: 0, count: flatpakInfoLimit + 1)
        let count = Glibc.read(fd, &bytes, bytes.count)
        guard count >= 0, count <= flatpakInfoLimit,
            let id = flatpakID(info: String(decoding: bytes[..<count], as: UTF8.self)), isFlatpakAppID(id)
        else {
            throw Failure(
                description: "this program's /.flatpak-info names no valid Flatpak app ([Application] name=): "
                    + "not a Flatpak sandbox's")
        }
        return id
    }

    /// A Flatpak app id as Flatpak defines one: at most 255 characters, three or more elements
    /// separated by `.`, each non-empty, of `A-Z a-z 0-9 _` (and `-` in the last), none starting
    /// with a digit.
    static func isFlatpakAppID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 255 else { return false }
        let elements = id.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        for (index, element) in elements.enumerated() {
            let last = index == elements.count - 1
            guard let first = element.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
            for scalar in element.unicodeScalars {
                let allowed =
                    ("A"..."Z").contains(scalar) || ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)
                    || scalar == "_" || (last && scalar == "-")
                guard allowed else { return false }
            }
        }
        return true
    }

    /// `name=` of the `[Application]` group of a `.flatpak-info` file.
    static func flatpakID(info: String) -> String? {
        var inApplication = false
        for line in info.split(separator: "\n") {
            let text = line.trimmingWhitespace()
            if text.hasPrefix("[") {
                inApplication = text == "[Application]"
            } else if inApplication, text.hasPrefix("name=") {
                let name = String(text.dropFirst(5))
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }

    /// `pidfd_open(pid)`, or -1 (tests pin a process as the server does on older kernels).
    static func openPidfd(_ pid: Int32) -> Int32 { gpslocd_pidfd_open(pid) }

    /// `CLOCK_BOOTTIME` now, in seconds (the clock `/proc/PID/stat`'s start time counts on).
    static func bootSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
