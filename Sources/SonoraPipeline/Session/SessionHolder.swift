/// The client whose session stands in the way of a request: named in refusals.
public struct SessionHolder: Codable, Sendable, Equatable {
    public var pid: Int32
    public var name: String
    public var role: String?

    public init(pid: Int32, name: String, role: String?) {
        self.pid = pid
        self.name = name
        self.role = role
    }
}
