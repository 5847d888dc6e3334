import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// What a `jack[:PEER][@SERVER]` device name asks for: Sonora as a JACK client, its
/// ports auto-connected to PEER's, on the server SERVER (else the default server,
/// `JACK_DEFAULT_SERVER` or "default").
///
/// - `jack`: ports registered, nothing connected (connect them with `jack_connect`,
///   qjackctl, a session manager …) — a client never grabs ports it was not told to;
/// - `jack:system`: Sonora's inputs from `system:capture_1…N`, its outputs to
///   `system:playback_1…N`; any client name works the same way, its output ports feeding
///   Sonora's inputs and Sonora's outputs feeding its input ports, in port order;
/// - `jack:self`: Sonora's outputs to its own inputs through JACK's graph (a round trip
///   with no sound card; JACK delays a feedback connection by one period);
/// - `jack:system@studio`, `jack:@studio`: the same on the server named `studio`.
public struct JACKDeviceName: Hashable, Sendable {
    public enum Peer: Hashable, Sendable {
        /// No auto-connection.
        case none
        /// Sonora's outputs to its own inputs.
        case itself
        /// A client by name (`system`, `PulseAudio JACK Sink` …).
        case client(String)
    }

    public var peer: Peer
    /// The server's name, or nil for the default server.
    public var server: String?

    public init(peer: Peer = .none, server: String? = nil) {
        self.peer = peer
        self.server = server
    }

    /// The client name Sonora registers as.
    public static let clientName = "sonora"

    /// Parses what follows `jack:` (nil: bare `jack`). Throws `AudioError(.badDevice)`
    /// naming what is wrong.
    public static func parse(_ argument: String?) throws(AudioError) -> JACKDeviceName {
        guard let argument else { return JACKDeviceName() }
        var peerText = argument
        var server: String?
        if let at = argument.lastIndex(of: "@") {
            peerText = String(argument[..<at])
            let name = String(argument[argument.index(after: at)...])
            guard !name.isEmpty, name.utf8.count <= 63, name.utf8.allSatisfy(isServerNameByte) else {
                throw AudioError(.badDevice, "'jack:\(argument)': a JACK server name is 1…63 letters, digits, '.', '_' and '-' (jack:PEER@SERVER)")
            }
            server = name
        }
        let peer: Peer
        switch peerText {
        case "": peer = .none
        case "self": peer = .itself
        default:
            // JACK client names are at most 63 bytes and cannot hold the port separator.
            guard peerText.utf8.count <= 63, !peerText.contains(":") else {
                throw AudioError(.badDevice, "'jack:\(argument)': a JACK client name is at most 63 bytes without ':' (jack:CLIENT, e.g. jack:system)")
            }
            peer = .client(peerText)
        }
        if case .none = peer, server == nil {
            throw AudioError(.badDevice, "'jack:': name the client to connect to (jack:system), or write `jack` for no auto-connection")
        }
        return JACKDeviceName(peer: peer, server: server)
    }

    /// The name `parse` reads back, with the `jack` prefix.
    public var deviceName: String {
        let peerText: String = switch peer {
        case .none: ""
        case .itself: "self"
        case .client(let name): name
        }
        if let server { return "jack:\(peerText)@\(server)" }
        return peerText.isEmpty ? "jack" : "jack:\(peerText)"
    }

    /// Checks, without registering ports, that the server runs and has the peer client
    /// (for a config check: `device: jack:…` with no server is refused where it stands).
    public func checkServer() throws(AudioError) {
        guard let ports = JACKPortDirectory.ports(server: server) else {
            let shown = server ?? getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? "default"
            throw AudioError(.badDevice, "'\(deviceName)': no JACK server '\(shown)' is running (start jackd, or name the server: jack:PEER@SERVER)")
        }
        if case .client(let peer) = peer, !ports.contains(where: { $0.name.hasPrefix(peer + ":") }) {
            throw AudioError(.badDevice, "'\(deviceName)': the JACK server has no client '\(peer)' with audio ports (`sonora devices` lists them)")
        }
    }

    private static func isServerNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
