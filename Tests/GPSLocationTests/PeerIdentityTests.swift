import Foundation
import Testing

@testable import GPSLocationBroker

/// #51: identity fails closed, and says why — a kernel or a seccomp filter without `pidfd_open`
/// (Linux before 5.3, some container profiles, valgrind) refuses every program, and the refusal
/// must name that, not blame the program for having exited.
@Suite("gpslocd says why it cannot pin a caller")
struct PeerIdentityTests {
    @Test("pidfd_open's errors: gone, out of descriptors, or no pidfd_open here")
    func pidfdFailures() {
        #expect(PeerIdentity.pidfdFailure(42, errno: ESRCH).description.contains("has already exited"))
        #expect(PeerIdentity.pidfdFailure(42, errno: EMFILE).description.contains("run out of file descriptors"))
        for code in [ENOSYS, EPERM] {
            let said = PeerIdentity.pidfdFailure(42, errno: code).description
            #expect(said.contains("pidfd_open failed") && said.contains("Linux 5.3"), "\(said)")
            #expect(!said.contains("exited"), "\(said)")
        }
    }
}
