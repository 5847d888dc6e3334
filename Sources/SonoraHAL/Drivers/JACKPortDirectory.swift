import CJackLoader
import SonoraCore

/// The audio ports a running JACK server has, for `sonora devices` and for the JACK
/// device's auto-connection.
public enum JACKPortDirectory {
    /// One JACK audio port.
    public struct Port: Hashable, Sendable, Codable {
        /// `client:port`.
        public var name: String
        /// An output port (a source Sonora's inputs can take), else an input port.
        public var isOutput: Bool
        /// A port of the hardware (or the dummy backend), not of a client.
        public var isPhysical: Bool
    }

    /// The audio ports on `server` (nil: the default server), or nil when no server runs
    /// there. Opens and closes a short-lived client, `sonora-list`.
    public static func ports(server: String? = nil) -> [Port]? {
        guard (try? JACKLibrary.load(for: "jack")) != nil else { return nil }  // no libjack: no server to list
        JACKDevice.silenceLibrary()
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue)
        guard let client = sonora_jack_client_open("sonora-list", options, &status, server) else { return nil }
        defer { sonora_jack_client_close(client) }
        var ports: [Port] = []
        for name in audioPorts(client, flags: JackPortFlags(rawValue: 0)) {
            guard let port = sonora_jack_port_by_name(client, name) else { continue }
            let flags = UInt32(sonora_jack_port_flags(port))
            ports.append(Port(name: name, isOutput: flags & JackPortIsOutput.rawValue != 0, isPhysical: flags & JackPortIsPhysical.rawValue != 0))
        }
        return ports
    }

    /// The names of the audio ports with `flags` (none: every audio port), in the server's order.
    static func audioPorts(_ client: OpaquePointer, flags: JackPortFlags) -> [String] {
        guard let list = sonora_jack_get_ports(client, nil, "32 bit float mono audio", UInt(flags.rawValue)) else { return [] }
        defer { sonora_jack_free(list) }
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        return names
    }
}
