import CGeoClueBus
import Glibc

/// The few sd-bus calls the GeoClue face makes, in Swift: sd-bus's own message functions (the
/// variadic ones cannot be called from Swift, so values are appended one at a time). Every
/// function here runs on the face's bus thread.
enum BusMessage {
    static let managerPath = "/org/freedesktop/GeoClue2/Manager"
    static let clientPrefix = "/org/freedesktop/GeoClue2/Client/"
    static let managerInterface = "org.freedesktop.GeoClue2.Manager"
    static let clientInterface = "org.freedesktop.GeoClue2.Client"
    static let locationInterface = "org.freedesktop.GeoClue2.Location"
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    static let failed = "org.freedesktop.DBus.Error.Failed"

    /// A value for a property or a signal.
    enum Value {
        case bool(Bool)
        case uint32(UInt32)
        case double(Double)
        case string(String)
        case objectPath(String)
        /// GeoClue's `Timestamp`: seconds and microseconds since the epoch, `(tt)`.
        case timestamp(UInt64, UInt64)

        var signature: String {
            switch self {
            case .bool: "b"
            case .uint32: "u"
            case .double: "d"
            case .string: "s"
            case .objectPath: "o"
            case .timestamp: "(tt)"
            }
        }
    }

    static func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

    /// Appends `value` to `message`; a negative errno when sd-bus refuses.
    @discardableResult
    static func append(_ message: OpaquePointer, _ value: Value) -> Int32 {
        switch value {
        case .bool(let flag):
            var int: Int32 = flag ? 1 : 0
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &int)
        case .uint32(var number):
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &number)
        case .double(var number):
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "d")), &number)
        case .string(let text):
            return text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        case .objectPath(let path):
            return path.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
        case .timestamp(var seconds, var microseconds):
            var r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "r")), "tt")
            if r >= 0 { r = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "t")), &seconds) }
            if r >= 0 { r = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "t")), &microseconds) }
            if r >= 0 { r = sd_bus_message_close_container(message) }
            return r
        }
    }

    /// Reads one string or object path (`type` "s" or "o") from `message`.
    static func readString(_ message: OpaquePointer, type: Character) -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(type.asciiValue ?? 0), &pointer) > 0 else { return nil }
        return text(pointer)
    }

    static func readUInt32(_ message: OpaquePointer) -> UInt32? {
        var number: UInt32 = 0
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &number) > 0 else { return nil }
        return number
    }

    static func readBool(_ message: OpaquePointer) -> Bool? {
        var flag: Int32 = 0
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "b")), &flag) > 0 else { return nil }
        return flag != 0
    }

    /// Answers `call` with `values` (none: an empty return).
    @discardableResult
    static func reply(_ call: OpaquePointer, _ values: [Value] = []) -> Int32 {
        var reply: OpaquePointer?
        var r = sd_bus_message_new_method_return(call, &reply)
        guard r >= 0, let reply else { return r }
        defer { sd_bus_message_unref(reply) }
        for value in values where r >= 0 { r = append(reply, value) }
        return r < 0 ? r : sd_bus_send(nil, reply, nil)
    }

    /// Answers `call` with a D-Bus error.
    @discardableResult
    static func replyError(_ call: OpaquePointer, _ name: String, _ message: String) -> Int32 {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        _ = gcb_error(&error, name, message)
        return sd_bus_reply_method_error(call, &error)
    }

    /// `org.freedesktop.DBus.Properties.PropertiesChanged` for `path`, to `destination` only
    /// (nil: to everyone): a client's properties are its owner's business, not the bus's.
    @discardableResult
    static func propertiesChanged(
        _ bus: OpaquePointer, path: String, interface: String, _ changes: [(String, Value)], to destination: String?
    ) -> Int32 {
        var signal: OpaquePointer?
        var r = sd_bus_message_new_signal(bus, &signal, path, "org.freedesktop.DBus.Properties", "PropertiesChanged")
        guard r >= 0, let signal else { return r }
        defer { sd_bus_message_unref(signal) }
        r = append(signal, .string(interface))
        if r >= 0 { r = sd_bus_message_open_container(signal, CChar(UInt8(ascii: "a")), "{sv}") }
        for (name, value) in changes where r >= 0 {
            r = sd_bus_message_open_container(signal, CChar(UInt8(ascii: "e")), "sv")
            if r >= 0 { r = append(signal, .string(name)) }
            if r >= 0 { r = sd_bus_message_open_container(signal, CChar(UInt8(ascii: "v")), value.signature) }
            if r >= 0 { r = append(signal, value) }
            if r >= 0 { r = sd_bus_message_close_container(signal) }
            if r >= 0 { r = sd_bus_message_close_container(signal) }
        }
        if r >= 0 { r = sd_bus_message_close_container(signal) }
        if r >= 0 { r = sd_bus_message_open_container(signal, CChar(UInt8(ascii: "a")), "s") }
        if r >= 0 { r = sd_bus_message_close_container(signal) }
        if r >= 0, let destination { r = sd_bus_message_set_destination(signal, destination) }
        return r < 0 ? r : sd_bus_send(bus, signal, nil)
    }

    /// A signal of `interface` at `path` with `values`, to `destination` only.
    @discardableResult
    static func signal(
        _ bus: OpaquePointer, path: String, interface: String, member: String, _ values: [Value], to destination: String
    ) -> Int32 {
        var signal: OpaquePointer?
        var r = sd_bus_message_new_signal(bus, &signal, path, interface, member)
        guard r >= 0, let signal else { return r }
        defer { sd_bus_message_unref(signal) }
        for value in values where r >= 0 { r = append(signal, value) }
        if r >= 0 { r = sd_bus_message_set_destination(signal, destination) }
        return r < 0 ? r : sd_bus_send(bus, signal, nil)
    }

    /// The D-Bus error of a reply message, if it is one: (name, message).
    static func error(of message: OpaquePointer) -> (String, String)? {
        guard sd_bus_message_is_method_error(message, nil) > 0, let error = sd_bus_message_get_error(message) else {
            return nil
        }
        return (text(error.pointee.name) ?? "?", text(error.pointee.message) ?? "")
    }

    static func errnoText(_ r: Int32) -> String { String(cString: strerror(-r)) }
}
