#if canImport(Glibc)
import Glibc
#endif
import SonoraCore

/// A netjack2 master that answered a probe: where it is and what it would give a slave.
public struct NetJackMasterAdvert: Codable, Hashable, Sendable {
    /// The IPv4 address its set-up came from: `netjack:slave@ADDRESS` joins it.
    public var address: String
    /// The master's network name (its host name, as netjack2 sends it).
    public var name: String
    public var sampleRate: Int
    public var periodFrames: Int
    /// Audio channels master → slave and slave → master it offered (its physical ports'
    /// counts: the probe asks for "as many as you have").
    public var sendChannels: Int
    public var returnChannels: Int
    public var mtu: Int
    /// The session id it gave the probe (netjack2's `fID`).
    public var sessionID: Int
}

/// Finds netjack2 masters by asking, the only way there is: a master never announces itself
/// (jackd's netmanager and `jack_net_master` only listen on the group; see docs/networking.md),
/// so the probe does what a slave does — sends `SLAVE_AVAILABLE` to the group — and listens
/// for each master's `SLAVE_SETUP`. Then it declines: a master's set-up loop ends after five
/// answers that are not `START_MASTER` (JACK2's `JackNetMasterInterface::Init`), so the probe
/// answers each `SLAVE_SETUP` at once with `KILL_MASTER`. The master thus gives up within
/// milliseconds, before it opens a JACK client or ports for the probe, and logs a failed
/// set-up ("Slave doesn't respond"). Unanswered, it would wait 5 × 10 s and take no other
/// slave meanwhile.
///
/// The packets are netjack2's `session_params_t` (protocol 8, JACK2 1.9.x), 644 bytes,
/// integers big-endian, written field by field here (no packed C struct).
public enum NetJackMasterProbe {
    static let packetSize = 644
    static let protocolVersion: UInt32 = 8
    enum PacketID: Int32 {
        case slaveAvailable = 0, slaveSetup = 1, startMaster = 2, startSlave = 3, killMaster = 4
    }
    // Offsets in session_params_t.
    static let nameOffset = 16, nameSize = 64
    static let masterNetNameOffset = 80, slaveNetNameOffset = 336, netNameSize = 256
    static let mtuOffset = 592, idOffset = 596, sendAudioOffset = 604, returnAudioOffset = 608
    static let sendMIDIOffset = 612, returnMIDIOffset = 616, sampleRateOffset = 620, periodOffset = 624
    static let syncModeOffset = 636, latencyOffset = 640

    /// Sends one `SLAVE_AVAILABLE` to `group:port` and collects the masters that answer within
    /// `seconds`, declining each. `group` is netjack2's multicast group or a master's own
    /// address. Throws when the socket cannot be made or the packet cannot be sent (no route).
    public static func probe(
        group: String = NetJackDeviceName.defaultAddress, port: Int = NetJackDeviceName.defaultPort,
        seconds: Double = 1, name: String = "sonora-probe"
    ) throws(AudioError) -> [NetJackMasterAdvert] {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, group, &target.sin_addr) == 1 else {
            throw AudioError(.badDevice, "netjack2 probe: '\(group)' is not an IPv4 address")
        }
        guard (1...65535).contains(port), seconds > 0, seconds <= 60 else {
            throw AudioError(.parameterError, "netjack2 probe: port \(port) or \(seconds) s out of range (1…65535, (0, 60])")
        }
        let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw AudioError(.unspecified, "netjack2 probe: socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var ttl: UInt8 = 1  // the local segment, as netjack2's own multicast
        setsockopt(socket, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, socklen_t(MemoryLayout<UInt8>.size))

        var available = [UInt8](repeating: 0, count: packetSize)
        write(&available, packetType: .slaveAvailable)
        writeText(&available, name, at: nameOffset, size: nameSize)
        writeText(&available, hostName(), at: slaveNetNameOffset, size: netNameSize)
        writeInteger(&available, 1500, at: mtuOffset)
        // -1: "as many as your physical ports" — the master then says how many it has.
        for offset in [sendAudioOffset, returnAudioOffset] { writeInteger(&available, -1, at: offset) }
        for offset in [sendMIDIOffset, returnMIDIOffset] { writeInteger(&available, 0, at: offset) }
        writeInteger(&available, 1, at: syncModeOffset)
        writeInteger(&available, 2, at: latencyOffset)
        let sent = withUnsafePointer(to: &target) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, available, available.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == available.count else {
            throw AudioError(.unspecified, "netjack2 probe: cannot send to \(group):\(port): \(String(cString: strerror(errno)))")
        }

        var masters: [NetJackMasterAdvert] = []
        let deadline = HostTime.now.seconds + seconds
        var packet = [UInt8](repeating: 0, count: packetSize + 1)
        while true {
            let left = deadline - HostTime.now.seconds
            if left <= 0 { break }
            var wait = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&wait, 1, Int32(max(1, (left * 1000).rounded(.up))))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { break }
            var source = sockaddr_in()
            var sourceLength = socklen_t(MemoryLayout<sockaddr_in>.size)
            let received = withUnsafeMutablePointer(to: &source) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, &packet, packet.count, 0, $0, &sourceLength) }
            }
            // Anything but a whole session packet of type SLAVE_SETUP is not a master's answer.
            guard received == packetSize, text(packet, at: 0, size: 8) == "params",
                  integer(packet, at: 12) == PacketID.slaveSetup.rawValue else { continue }
            var decline = packet
            decline.removeLast()
            write(&decline, packetType: .killMaster)
            _ = withUnsafePointer(to: &source) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket, decline, decline.count, 0, $0, sourceLength)
                }
            }
            let advert = NetJackMasterAdvert(
                address: addressText(source.sin_addr), name: text(packet, at: masterNetNameOffset, size: netNameSize),
                sampleRate: Int(integer(packet, at: sampleRateOffset)), periodFrames: Int(integer(packet, at: periodOffset)),
                sendChannels: Int(integer(packet, at: sendAudioOffset)), returnChannels: Int(integer(packet, at: returnAudioOffset)),
                mtu: Int(integer(packet, at: mtuOffset)), sessionID: Int(UInt32(bitPattern: integer(packet, at: idOffset))))
            // A master sends its set-up up to five times (each answered): listed once.
            if !masters.contains(where: { $0.address == advert.address && $0.sessionID == advert.sessionID }) { masters.append(advert) }
        }
        return masters.sorted { ($0.address, $0.sessionID) < ($1.address, $1.sessionID) }
    }

    static func write(_ packet: inout [UInt8], packetType: PacketID) {
        writeText(&packet, "params", at: 0, size: 8)
        writeInteger(&packet, Int32(bitPattern: protocolVersion), at: 8)
        writeInteger(&packet, packetType.rawValue, at: 12)
    }

    static func writeInteger(_ packet: inout [UInt8], _ value: Int32, at offset: Int) {
        let bits = UInt32(bitPattern: value)
        for index in 0..<4 { packet[offset + index] = UInt8(truncatingIfNeeded: bits >> (24 - 8 * UInt32(index))) }
    }

    static func integer(_ packet: [UInt8], at offset: Int) -> Int32 {
        Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(packet[offset + $1]) })
    }

    /// A NUL-terminated text field, cut to fit (one byte kept for the NUL).
    static func writeText(_ packet: inout [UInt8], _ text: String, at offset: Int, size: Int) {
        for (index, byte) in text.utf8.prefix(size - 1).enumerated() { packet[offset + index] = byte }
    }

    static func text(_ packet: [UInt8], at offset: Int, size: Int) -> String {
        let field = packet[offset..<(offset + size)]
        return String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }

    static func addressText(_ address: in_addr) -> String {
        var address = address
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "sonora" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
