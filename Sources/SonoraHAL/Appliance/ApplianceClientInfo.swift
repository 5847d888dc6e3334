/// Playback (the client writes, the appliance mixes) or capture (the appliance writes what
/// its input hears, the client reads).
public enum ApplianceStreamDirection: String, Hashable, Sendable, CaseIterable {
    case playback
    case capture
}

/// One connected client as the server knows it: the peer's credentials from
/// `SO_PEERCRED` (never a pid from a message) and the name it gave in `hello`.
public struct ApplianceClientInfo: Hashable, Sendable {
    /// The server's number for the connection (a process may hold several: a device's
    /// and its audio session's).
    public var connection: Int
    public var pid: Int32
    public var uid: UInt32
    public var name: String
    public var streams: [ApplianceStreamInfo]

    public init(connection: Int, pid: Int32, uid: UInt32, name: String, streams: [ApplianceStreamInfo] = []) {
        self.connection = connection
        self.pid = pid
        self.uid = uid
        self.name = name
        self.streams = streams
    }
}

/// One open stream, as `ApplianceStreamTable.snapshot()` reports it.
public struct ApplianceStreamInfo: Hashable, Sendable {
    public var id: Int
    public var pid: Int32
    public var direction: ApplianceStreamDirection
    public var channels: Int
    /// The gain now (linear; it ramps toward the last `setGain` target).
    public var gain: Float
    /// Loudest sample of the last period serviced, dBFS (−infinity for silence).
    public var peakDBFS: Double
    public var underruns: Int
    public var overruns: Int
    /// The client's ring position was out of range: the stream is silenced and removed.
    public var faulted: Bool

    public init(id: Int, pid: Int32, direction: ApplianceStreamDirection, channels: Int, gain: Float, peakDBFS: Double, underruns: Int, overruns: Int, faulted: Bool) {
        self.id = id
        self.pid = pid
        self.direction = direction
        self.channels = channels
        self.gain = gain
        self.peakDBFS = peakDBFS
        self.underruns = underruns
        self.overruns = overruns
        self.faulted = faulted
    }
}
