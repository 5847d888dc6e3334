#if canImport(Glibc)
import Glibc
#endif

/// A `session.group` as the system knows it.
public enum SessionGroup {
    /// The group's id, by name or number; nil when no such group exists here.
    public static func id(of group: String) -> gid_t? {
        if let entry = getgrnam(group) { return entry.pointee.gr_gid }
        if let number = UInt32(group), getgrgid(number) != nil { return number }
        return nil
    }
}
