import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct CtlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control a running `sonora run` over its control socket.",
        discussion: """
            Commands: nodes | params NODE | get NODE PARAM | set NODE PARAM VALUE [--ramp S] |
            property NODE NAME [VALUE] | meters | status | reload | save PATH.
            PARAM is a name or an ID; VALUE may carry a unit (-6 dB, 1.2 kHz, 250 ms, on).
            The socket is --socket, else $SONORA_SOCKET, else /tmp/sonora.sock. Human output
            by default, the daemon's JSON answer with --json; exits 1 with the reason on
            stderr when the request fails.

            Examples:
              sonora ctl --socket /tmp/sonora.sock status
              sonora ctl set mixer volume -6dB --scope input --element 1 --ramp 0.2
              sonora ctl params eq --json
              sonora ctl save /etc/sonora/current.yaml
            """
    )

    @Option(help: "The control socket path.")
    var socket: String?

    @Option(help: "Parameter scope (global, input, output).")
    var scope: String?

    @Option(help: "Parameter element (bus).")
    var element: Int?

    @Option(help: "Ramp a set over this many seconds.")
    var ramp: Double?

    @Flag(help: "Print the daemon's JSON answer.")
    var json = false

    @Argument(help: "The command and its arguments.")
    var words: [String]

    func request() throws -> [String: Any] {
        guard let command = words.first else { throw ValidationError("give a command: nodes, params, get, set, property, meters, status, reload, save") }
        let args = Array(words.dropFirst())
        func need(_ count: Int, _ usage: String) throws {
            guard args.count == count else { throw ValidationError("usage: sonora ctl \(usage)") }
        }
        var request: [String: Any] = [:]
        switch command {
        case "nodes", "meters", "status", "reload":
            try need(0, command)
            request["cmd"] = command
        case "params":
            try need(1, "params NODE")
            request = ["cmd": "params", "node": args[0]]
        case "get":
            try need(2, "get NODE PARAM")
            request = ["cmd": "get", "node": args[0], "param": Int(args[1]) ?? args[1]]
        case "set":
            try need(3, "set NODE PARAM VALUE")
            request = ["cmd": "set", "node": args[0], "param": Int(args[1]) ?? args[1], "value": Double(args[2]) ?? args[2]]
            if let ramp { request["ramp"] = ramp }
        case "property":
            guard args.count == 2 || args.count == 3 else { throw ValidationError("usage: sonora ctl property NODE NAME [VALUE]") }
            request = ["cmd": args.count == 2 ? "get-property" : "set-property", "node": args[0], "property": args[1]]
            if args.count == 3 {
                switch args[2].lowercased() {
                case "true", "on", "yes": request["value"] = true
                case "false", "off", "no": request["value"] = false
                default: request["value"] = args[2]
                }
            }
        case "save":
            try need(1, "save PATH")
            request = ["cmd": "save", "path": URL(fileURLWithPath: args[0]).standardizedFileURL.path]
        default:
            throw ValidationError("unknown command '\(command)'; use nodes, params, get, set, property, meters, status, reload, save")
        }
        if let scope { request["scope"] = scope }
        if let element { request["element"] = element }
        return request
    }

    func run() throws {
        let path = socket ?? ProcessInfo.processInfo.environment["SONORA_SOCKET"] ?? "/tmp/sonora.sock"
        let body = try request()
        let answer = try Self.exchange(body, at: path)
        guard let response = try JSONSerialization.jsonObject(with: answer) as? [String: Any] else {
            throw CLIError("the daemon answered something that is not a JSON object")
        }
        if json {
            print(String(decoding: answer, as: UTF8.self))
        } else {
            printHuman(response, command: body["cmd"] as? String ?? "")
        }
        if response["ok"] as? Bool != true {
            if !json { FileHandle.standardError.write(Data("Error: \(response["error"] as? String ?? "request failed")\n".utf8)) }
            throw ExitCode(1)
        }
    }

    static func exchange(_ body: [String: Any], at path: String) throws -> Data {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CLIError("cannot create a socket") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { throw CLIError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard connected == 0 else { throw CLIError("cannot connect to \(path): \(String(cString: strerror(errno))) (is `sonora run` running with control.socket: \(path)?)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var data = try JSONSerialization.data(withJSONObject: body)
        data.append(10)
        let sent = data.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == data.count else { throw CLIError("cannot send to \(path)") }
        var answer = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !answer.contains(10) {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { throw CLIError("the daemon at \(path) closed the connection without an answer") }
            answer.append(contentsOf: chunk[0..<count])
        }
        return answer.prefix { $0 != 10 }
    }

    private func printHuman(_ response: [String: Any], command: String) {
        guard response["ok"] as? Bool == true else { return }
        switch command {
        case "nodes":
            for node in response["nodes"] as? [[String: Any]] ?? [] {
                print("\(node["id"] as? String ?? "")\t\(node["kind"] as? String ?? "")\t\(node["unit"] as? String ?? "")")
            }
        case "params":
            for p in response["params"] as? [[String: Any]] ?? [] {
                let value = (p["value"] as? Double).map { String(format: "%g", $0) } ?? "?"
                let element = p["scope"] as? String == "global" ? "" : "[\(p["element"] as? Int ?? 0)]"
                print(String(format: "%4d %@%@ %@ = %@ %@ (%g…%g)%@", p["id"] as? Int ?? 0, p["scope"] as? String ?? "", element,
                             p["name"] as? String ?? "", value, p["unit"] as? String ?? "", p["min"] as? Double ?? 0, p["max"] as? Double ?? 0,
                             p["writable"] as? Bool == false ? " read-only" : ""))
            }
        case "get", "set":
            print("\(response["param"] as? String ?? "") = \(String(format: "%g", response["value"] as? Double ?? 0)) \(response["unit"] as? String ?? "")")
        case "meters":
            for m in response["meters"] as? [[String: Any]] ?? [] {
                print(String(format: "%@.%@[%d] %.1f %@", m["node"] as? String ?? "", m["meter"] as? String ?? "", m["element"] as? Int ?? 0, m["value"] as? Double ?? 0, m["unit"] as? String ?? ""))
            }
        case "status":
            let s = response["status"] as? [String: Any] ?? [:]
            for key in s.keys.sorted() { print("\(key): \(s[key]!)") }
        case "get-property":
            print("\(response["value"] ?? "")")
        default:
            print("ok")
        }
    }
}
