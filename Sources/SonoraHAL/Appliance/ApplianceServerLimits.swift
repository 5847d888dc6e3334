/// Bounds the server keeps whatever its clients do.
public struct ApplianceServerLimits: Hashable, Sendable {
    /// Streams open at once over all clients (the stream table's slots).
    public var maximumStreams: Int
    /// Connections at once; one more is closed with an error line.
    public var maximumClients: Int
    /// Bytes of replies and events queued for one client that does not read; beyond it
    /// the client is closed.
    public var maximumQueuedBytes: Int

    public init(maximumStreams: Int = 64, maximumClients: Int = 64, maximumQueuedBytes: Int = 256 * 1024) {
        self.maximumStreams = maximumStreams
        self.maximumClients = maximumClients
        self.maximumQueuedBytes = maximumQueuedBytes
    }
}
