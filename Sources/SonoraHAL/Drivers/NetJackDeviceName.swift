import SonoraCore

/// A `netjack:` device name: Sonora on netjack2's network transport (libjacknet), as a
/// slave of a JACK master somewhere on the network, or as a master that drives slaves.
///
/// ```
/// netjack:slave[@ADDRESS[:PORT]][,OPTION=VALUE…]
/// netjack:master[@ADDRESS[:PORT]][,OPTION=VALUE…]
/// ```
/// ADDRESS is an IPv4 address: netjack2's multicast group (default 225.3.19.154, where
/// jackd's `netmanager` and `jack_net_master` listen) or the master's own address;
/// PORT defaults to 19000. Options:
/// - `latency=CYCLES` (slave; 0…30, default 2): the network latency the master and slave
///   agree on, in periods — the round trip grows by this many cycles;
/// - `mtu=BYTES` (slave; 1500…9000, default 1500);
/// - `encoder=float|int|opus` (slave; default float, the only bit-exact one), `kbps=N`
///   (opus only, required there);
/// - `name=NAME` (the slave's name at the master; letters, digits, '.', '_', '-');
/// - `timeout=SECONDS` (1…3600, default 10): how long opening waits for the other side.
public struct NetJackDeviceName: Hashable, Sendable {
    public enum Role: String, Hashable, Sendable {
        case slave
        case master
    }

    /// How samples travel (libjacknet's `JackNetEncoder`).
    public enum Encoder: String, Hashable, Sendable, CaseIterable {
        /// 32-bit float, bit-exact.
        case float
        /// 16-bit integer.
        case int
        /// Opus at `kbps`.
        case opus

        var code: Int32 {
            switch self {
            case .float: 0
            case .int: 1
            case .opus: 3
            }
        }
    }

    public static let defaultAddress = "225.3.19.154"
    public static let defaultPort = 19000

    public var role: Role
    public var address: String
    public var port: Int
    public var latencyCycles: Int
    public var mtu: Int
    public var encoder: Encoder
    public var kbps: Int
    public var clientName: String
    public var timeoutSeconds: Int

    public init(
        role: Role, address: String = defaultAddress, port: Int = defaultPort, latencyCycles: Int = 2, mtu: Int = 1500,
        encoder: Encoder = .float, kbps: Int = 0, clientName: String = "sonora", timeoutSeconds: Int = 10
    ) {
        self.role = role
        self.address = address
        self.port = port
        self.latencyCycles = latencyCycles
        self.mtu = mtu
        self.encoder = encoder
        self.kbps = kbps
        self.clientName = clientName
        self.timeoutSeconds = timeoutSeconds
    }

    /// Parses the part after `netjack:`. Throws `AudioError(.badDevice)` naming what is wrong.
    public static func parse(_ argument: String) throws(AudioError) -> NetJackDeviceName {
        let shown = "netjack:" + DeviceSpecifier.excerpt(argument)
        let usage = "(netjack:slave[@ADDRESS[:PORT]][,latency=N,mtu=N,encoder=float|int|opus,kbps=N,name=NAME,timeout=S] or netjack:master[@ADDRESS[:PORT]][,name=NAME,timeout=S])"
        var parts = argument.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let head = parts.removeFirst()
        let roleText: String
        var endpoint: String?
        if let at = head.firstIndex(of: "@") {
            roleText = String(head[..<at])
            endpoint = String(head[head.index(after: at)...])
        } else {
            roleText = head
        }
        guard let role = Role(rawValue: roleText) else {
            throw AudioError(.badDevice, "'\(shown)': say whether Sonora is the `slave` or the `master` \(usage)")
        }
        var name = NetJackDeviceName(role: role)
        if let endpoint {
            var host = endpoint
            if let colon = endpoint.lastIndex(of: ":") {
                host = String(endpoint[..<colon])
                let portText = endpoint[endpoint.index(after: colon)...]
                guard let port = Int(portText), port > 0, port < 65536 else {
                    throw AudioError(.badDevice, "'\(shown)': port '\(DeviceSpecifier.excerpt(String(portText)))' is not a UDP port (1…65535)")
                }
                name.port = port
            }
            guard isIPv4(host) else {
                throw AudioError(.badDevice, "'\(shown)': '\(DeviceSpecifier.excerpt(host))' is not an IPv4 address (libjacknet takes dotted quads such as 225.3.19.154 or 10.0.0.1, no host names)")
            }
            name.address = host
        }
        var seen: Set<String> = []
        for part in parts {
            guard let equals = part.firstIndex(of: "=") else {
                throw AudioError(.badDevice, "'\(shown)': option '\(DeviceSpecifier.excerpt(part))' is not OPTION=VALUE \(usage)")
            }
            let key = String(part[..<equals])
            let value = String(part[part.index(after: equals)...])
            guard seen.insert(key).inserted else { throw AudioError(.badDevice, "'\(shown)': option '\(key)' given twice") }
            func number(_ range: ClosedRange<Int>, _ what: String) throws(AudioError) -> Int {
                guard let number = Int(value), range.contains(number) else {
                    throw AudioError(.badDevice, "'\(shown)': \(key)=\(DeviceSpecifier.excerpt(value)) — \(what) must be a whole number \(range.lowerBound)…\(range.upperBound)")
                }
                return number
            }
            func slaveOnly() throws(AudioError) {
                guard role == .slave else { throw AudioError(.badDevice, "'\(shown)': `\(key)` is the slave's to choose (the master takes what its slaves ask)") }
            }
            switch key {
            case "latency":
                try slaveOnly()
                name.latencyCycles = try number(0...30, "the network latency in cycles")
            case "mtu":
                try slaveOnly()
                name.mtu = try number(1500...9000, "the MTU in bytes")
            case "encoder":
                try slaveOnly()
                guard let encoder = Encoder(rawValue: value) else {
                    throw AudioError(.badDevice, "'\(shown)': encoder '\(DeviceSpecifier.excerpt(value))' is not float, int or opus (this libjacknet has no CELT)")
                }
                name.encoder = encoder
            case "kbps":
                try slaveOnly()
                name.kbps = try number(8...512, "the Opus bit rate in kbit/s")
            case "name":
                guard !value.isEmpty, value.utf8.count <= 32, value.utf8.allSatisfy(isNameByte) else {
                    throw AudioError(.badDevice, "'\(shown)': name '\(DeviceSpecifier.excerpt(value))' must be 1…32 letters, digits, '.', '_' or '-'")
                }
                name.clientName = value
            case "timeout":
                name.timeoutSeconds = try number(1...3600, "the time-out in seconds")
            default:
                throw AudioError(.badDevice, "'\(shown)': unknown option '\(DeviceSpecifier.excerpt(key))' \(usage)")
            }
        }
        if name.encoder == .opus && name.kbps == 0 { throw AudioError(.badDevice, "'\(shown)': encoder=opus needs kbps=N (its bit rate)") }
        if name.encoder != .opus && seen.contains("kbps") { throw AudioError(.badDevice, "'\(shown)': kbps is for encoder=opus only") }
        return name
    }

    /// The name `parse` reads back (after `netjack:`), defaults left out.
    public var text: String {
        var text = role.rawValue
        if address != Self.defaultAddress || port != Self.defaultPort { text += "@\(address)" + (port != Self.defaultPort ? ":\(port)" : "") }
        if role == .slave {
            if latencyCycles != 2 { text += ",latency=\(latencyCycles)" }
            if mtu != 1500 { text += ",mtu=\(mtu)" }
            if encoder != .float { text += ",encoder=\(encoder.rawValue)" }
            if encoder == .opus { text += ",kbps=\(kbps)" }
        }
        if clientName != "sonora" { text += ",name=\(clientName)" }
        if timeoutSeconds != 10 { text += ",timeout=\(timeoutSeconds)" }
        return text
    }

    static func isIPv4(_ text: String) -> Bool {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        return octets.allSatisfy { octet in
            octet.count >= 1 && octet.count <= 3 && octet.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } && Int(octet)! <= 255
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
