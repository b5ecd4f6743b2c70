/// Versions, for `gpsloc version` and bug reports.
public enum GPSLocationInfo {
    public static let version = "0.1.0"
    /// The libgps API this build was compiled against, e.g. "11.0".
    public static var libgpsAPIVersion: String {
        let version = LibGPSHandle.apiVersion
        return "\(version.major).\(version.minor)"
    }
}
