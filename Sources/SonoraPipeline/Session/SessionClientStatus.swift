/// One attached client in `session_status` and `sonora session status`.
public struct SessionClientStatus: Codable, Sendable, Equatable {
    public var pid: Int32
    public var name: String
    public var role: String?
    /// nil until its first activation.
    public var category: SessionCategory?
    public var options: [String]
    public var active: Bool
    /// The duck in force, dB (nil: not ducked).
    public var duckedDB: Double?
    public var interrupted: Bool
    /// The pids interrupting it, first first.
    public var interruptedBy: [Int32]
    /// Its open streams: the coordinator has no streams; the appliance fills this in from its server.
    public var streams: Int

    public init(_ client: SessionClient, streams: Int = 0) {
        pid = client.pid
        name = client.name
        role = client.role
        category = client.category
        options = client.options.names
        active = client.active
        duckedDB = client.duckDB
        interrupted = client.isInterrupted
        interruptedBy = client.interruptedBy
        self.streams = streams
    }
}
