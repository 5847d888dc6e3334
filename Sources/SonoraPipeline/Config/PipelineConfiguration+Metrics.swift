#if canImport(Glibc)
import Glibc
#endif

extension PipelineConfiguration {
    /// The `metrics:` section: an HTTP endpoint serving `GET /metrics` in Prometheus' text
    /// format. Opt-in (no section, no listener) and loopback only: the numbers name the
    /// device, nodes and attached programs, and the server has no authentication.
    public struct Metrics: Sendable, Equatable {
        public static let defaultPort = 9464

        /// As written (`127.0.0.1:9464`, `localhost:9464`, `[::1]:9464`).
        public var listen: String
        /// The numeric loopback address it names (`127.0.0.1`, `::1`).
        public var host: String
        public var port: Int
        public var location: SourceLocation?

        public init(listen: String, host: String, port: Int, location: SourceLocation? = nil) {
            self.listen = listen
            self.host = host
            self.port = port
            self.location = location
        }

        /// `HOST:PORT` read and checked: the host must be a loopback address (127.0.0.0/8,
        /// ::1 or `localhost`), the port 1…65535. The error says what is wrong.
        public static func parseListen(_ text: String) -> Result<(host: String, port: Int), ListenProblem> {
            let usage = "give HOST:PORT on the loopback interface, e.g. 127.0.0.1:\(defaultPort) or [::1]:\(defaultPort)"
            var host: Substring, portText: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                    return .failure(ListenProblem("'\(Diagnostic.excerpt(text))' is not HOST:PORT; \(usage)"))
                }
                host = text[text.index(after: text.startIndex)..<close]
                portText = text[text.index(close, offsetBy: 2)...]
            } else {
                guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                    return .failure(ListenProblem("'\(Diagnostic.excerpt(text))' is not HOST:PORT; \(usage)"))
                }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard let port = Int(portText), (1...65535).contains(port) else {
                return .failure(ListenProblem("the port '\(Diagnostic.excerpt(String(portText)))' is not a number 1…65535; \(usage)"))
            }
            if host.lowercased() == "localhost" { return .success(("127.0.0.1", port)) }
            var v4 = in_addr(), v6 = in6_addr()
            if inet_pton(AF_INET, String(host), &v4) == 1 {
                // s_addr is in network order: its first byte in memory is the first octet.
                let first = withUnsafeBytes(of: v4.s_addr) { $0[0] }
                guard first == 127 else {
                    return .failure(ListenProblem("\(host) is not a loopback address; the metrics endpoint is served on localhost only (\(usage))"))
                }
                return .success((String(host), port))
            }
            if inet_pton(AF_INET6, String(host), &v6) == 1 {
                let loopback = withUnsafeBytes(of: v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
                guard loopback else {
                    return .failure(ListenProblem("\(host) is not a loopback address; the metrics endpoint is served on localhost only (\(usage))"))
                }
                return .success(("::1", port))
            }
            return .failure(ListenProblem("'\(Diagnostic.excerpt(String(host)))' is not an IP address or localhost; \(usage)"))
        }
    }

    public struct ListenProblem: Error, Sendable {
        public var message: String
        init(_ message: String) { self.message = message }
    }
}
