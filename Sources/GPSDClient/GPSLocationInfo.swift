/// Versions, for `gpsloc version` and bug reports.
public enum GPSLocationInfo {
    /// The release: the newest entry of CHANGELOG.md (the tests check they agree, and that a
    /// `vX.Y.Z` tag on the commit matches). A build between releases says the last release —
    /// SwiftPM runs no script at build time to ask git, so this is the documented fallback.
    public static let version = "0.13.6"
    /// The libgps API this build was compiled against, e.g. "11.0".
    public static var libgpsAPIVersion: String {
        let version = LibGPSHandle.apiVersion
        return "\(version.major).\(version.minor)"
    }
}
