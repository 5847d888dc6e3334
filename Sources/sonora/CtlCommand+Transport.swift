import ArgumentParser
import SonoraPipeline

/// `sonora ctl transport …` and `sonora ctl patch …`: their words, and their answers for people.
extension CtlCommand {
    /// transport [play | stop | locate BEAT | tempo BPM | meter N/D] [--at SAMPLE]
    func transportRequest(_ args: [String]) throws -> ControlRequest {
        let actions = TransportRequest.Action.allCases.map(\.rawValue)
        guard let word = args.first else {
            if at != nil { throw ValidationError("--at goes with a change (play, stop, locate, tempo, meter)") }
            return .transport(TransportRequest(.status))
        }
        guard let action = TransportRequest.Action(rawValue: word.lowercased()) else {
            throw ValidationError("unknown transport action '\(word)'\(Self.hint(word, actions)); actions: \(actions.joined(separator: ", "))")
        }
        let usage = "usage: sonora ctl \(ControlVerb.transport.usage)"
        if action == .status && at != nil { throw ValidationError("--at goes with a change (play, stop, locate, tempo, meter)") }
        switch action {
        case .status, .play, .stop:
            guard args.count == 1 else { throw ValidationError(usage) }
            return .transport(TransportRequest(action, at: at))
        case .locate, .tempo:
            guard args.count == 2 else { throw ValidationError(usage) }
            guard let number = Double(args[1]), number.isFinite else {
                throw ValidationError("transport \(action.rawValue) takes a number (\(action == .locate ? "a beat" : "beats per minute")), not '\(args[1])'")
            }
            return .transport(action == .locate ? TransportRequest(.locate, beat: number, at: at) : TransportRequest(.tempo, tempo: number, at: at))
        case .meter:
            guard args.count == 2 else { throw ValidationError(usage) }
            return .transport(TransportRequest(.meter, meter: args[1], at: at))
        }
    }

    /// patch NODE [PROPERTY [VALUE]]: PROPERTY is a URI, a label or a URID.
    func patchRequest(_ args: [String]) throws -> ControlRequest {
        guard (1...3).contains(args.count) else { throw ValidationError("usage: sonora ctl \(ControlVerb.patch.usage)") }
        var property: PatchRequest.Property?
        if args.count >= 2 { property = UInt32(args[1]).map { .urid($0) } ?? .name(args[1]) }
        var value: ControlValue?
        if args.count == 3 {
            if let flag = Self.flag(args[2]), Double(args[2]) == nil { value = .flag(flag) } else { value = try Self.value(args[2]) }
        }
        return .patch(PatchRequest(node: args[0], property: property, value: value))
    }

    static func printTransport(_ reading: ControlResponse.TransportReading) {
        print("\(reading.playing ? "playing" : "stopped") at bar \(reading.bar + 1) beat \(String(format: "%.3f", reading.barBeat + 1)) (beat \(String(format: "%.3f", reading.beat)))")
        print("tempo: \(String(format: "%g", reading.tempo)) BPM, meter \(reading.meter)")
        print("frame: \(reading.frame), sample time: \(reading.sampleTime)")
    }

    static func printPatch(_ reading: ControlResponse.PatchReading) {
        for property in reading.properties {
            let access = [property.readable ? "r" : "", property.writable ? "w" : ""].joined()
            let type = property.type.map { $0.split(separator: "#").last.map(String.init) ?? $0 } ?? "?"
            print("\(property.label) = \(property.value?.description ?? "?")\t\(type) \(access)\tURID \(property.urid)\t\(property.uri)")
        }
    }
}
